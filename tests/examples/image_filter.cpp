// The main job: an image pipeline on the accelerator.  A synthetic scene is
// drawn on the CPU, blurred and edge-detected by kernels, and the CPU reads
// back a histogram, for several frames in which the scene moves.  Every
// frame is checked pixel by pixel against the same filters run on the CPU.
//
// The image descriptor lives in shared memory and points at its pixels, so
// the kernels follow an embedded pointer built by the CPU.
//
// Built with -DADSM_SERVER_KERNELS as a shared library, the same file is a
// remote device server's kernel library (adsm-device-server --kernels): its
// kernels are registered when the server loads it, and the program runs
// unchanged on ADSM_DEVICE=remote.
#include <adsm.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Image {
    int width, height;
    uint8_t *pixels;  // shared memory too
};

inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

inline uint8_t blur_at(const Image &im, int x, int y) {
    static const int w[3][3] = {{1, 2, 1}, {2, 4, 2}, {1, 2, 1}};
    int sum = 0;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            sum += w[dy + 1][dx + 1] *
                   im.pixels[clampi(y + dy, 0, im.height - 1) * im.width + clampi(x + dx, 0, im.width - 1)];
    return static_cast<uint8_t>((sum + 8) / 16);
}

inline uint8_t sobel_at(const Image &im, int x, int y) {
    auto p = [&](int dx, int dy) {
        return int(im.pixels[clampi(y + dy, 0, im.height - 1) * im.width + clampi(x + dx, 0, im.width - 1)]);
    };
    int gx = -p(-1, -1) - 2 * p(-1, 0) - p(-1, 1) + p(1, -1) + 2 * p(1, 0) + p(1, 1);
    int gy = -p(-1, -1) - 2 * p(0, -1) - p(1, -1) + p(-1, 1) + 2 * p(0, 1) + p(1, 1);
    int m = (gx < 0 ? -gx : gx) + (gy < 0 ? -gy : gy);
    return static_cast<uint8_t>(m > 255 ? 255 : m);
}

void blur_kernel(const adsm::thread_index &t, const Image *in, Image *out) {
    int x = int(adsm::global_x(t)), y = int(adsm::global_y(t));
    if (x < in->width && y < in->height) out->pixels[y * out->width + x] = blur_at(*in, x, y);
}

void sobel_kernel(const adsm::thread_index &t, const Image *in, Image *out) {
    int x = int(adsm::global_x(t)), y = int(adsm::global_y(t));
    if (x < in->width && y < in->height) out->pixels[y * out->width + x] = sobel_at(*in, x, y);
}

// A scene of a gradient, a moving disc and deterministic noise.
void draw(Image &im, int frame) {
    uint32_t rng = 12345u + uint32_t(frame);
    int cx = im.width / 4 + frame * im.width / 16, cy = im.height / 2, r = im.height / 5;
    for (int y = 0; y < im.height; ++y)
        for (int x = 0; x < im.width; ++x) {
            rng = rng * 1664525u + 1013904223u;
            int v = (x * 96) / im.width + int(rng >> 29);
            if ((x - cx) * (x - cx) + (y - cy) * (y - cy) < r * r) v += 140;
            im.pixels[y * im.width + x] = static_cast<uint8_t>(v > 255 ? 255 : v);
        }
}

}  // namespace

#ifdef ADSM_SERVER_KERNELS
namespace {
const adsm::kernel<blur_kernel> blur_at_load("image_filter.blur");
const adsm::kernel<sobel_kernel> sobel_at_load("image_filter.sobel");
}  // namespace
#else
int main(int argc, char **argv) {
    int size = argc > 1 ? atoi(argv[1]) : 1024;
    int frames = argc > 2 ? atoi(argv[2]) : 8;
    if (size < 16 || frames < 1) {
        fprintf(stderr, "usage: %s [size >= 16] [frames >= 1]\n", argv[0]);
        return 2;
    }
    try {
        adsm::kernel<blur_kernel> blur("image_filter.blur");
        adsm::kernel<sobel_kernel> sobel("image_filter.sobel");

        // Three images and their descriptors, all in shared memory.
        size_t npix = size_t(size) * size;
        adsm::shared_array<uint8_t> src_px(npix), tmp_px(npix), dst_px(npix);
        adsm::shared_array<Image> images(3);
        images[0] = {size, size, src_px.data()};
        images[1] = {size, size, tmp_px.data()};
        images[2] = {size, size, dst_px.data()};

        adsmDeviceInfo info;
        adsm::check(adsmGetDeviceInfo(&info));
        printf("image filter: %dx%d, %d frames, device %s, protocol %s\n", size, size, frames, info.name, info.protocol);

        std::vector<uint8_t> ref_tmp(npix), ref_dst(npix);
        uint64_t checksum = 1469598103934665603ull;
        adsm::dim3 block(16, 16), grid((size + 15) / 16, (size + 15) / 16);
        for (int f = 0; f < frames; ++f) {
            draw(images[0], f);
            blur(grid, block, &images[0], &images[1]);
            sobel(grid, block, &images[1], &images[2]);
            adsm::sync();

            // The CPU reads the result straight from shared memory.
            unsigned edges = 0;
            for (size_t i = 0; i < npix; ++i) edges += dst_px[i] > 64;

            // The same filters on the CPU, for the check.
            Image ref_t{size, size, ref_tmp.data()};
            for (int y = 0; y < size; ++y)
                for (int x = 0; x < size; ++x) ref_tmp[size_t(y) * size + x] = blur_at(images[0], x, y);
            for (int y = 0; y < size; ++y)
                for (int x = 0; x < size; ++x) ref_dst[size_t(y) * size + x] = sobel_at(ref_t, x, y);
            if (memcmp(ref_dst.data(), dst_px.data(), npix) != 0) {
                fprintf(stderr, "frame %d: device result differs from the CPU reference\n", f);
                return 1;
            }
            for (size_t i = 0; i < npix; ++i) checksum = (checksum ^ dst_px[i]) * 1099511628211ull;
            printf("  frame %d: %u edge pixels\n", f, edges);
        }
        printf("result: %d frames verified against the CPU, checksum %016llx\n", frames,
               static_cast<unsigned long long>(checksum));
    } catch (const adsm::error &e) {
        fprintf(stderr, "adsm error: %s\n", e.what());
        return 1;
    }
    return 0;
}
#endif
