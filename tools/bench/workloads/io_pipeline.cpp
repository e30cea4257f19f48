// I/O pipeline: read a 64 MiB file, transform it on the device, write the
// result to another file.  The explicit variant reads, copies in, runs,
// copies out and writes, one step after the other; the ADSM variant reads
// and writes shared memory directly, and the runtime streams the data
// between the file and the device while the system calls run.
#include <fcntl.h>
#include <unistd.h>

#include <stdexcept>
#include <vector>

#include "workload.h"

namespace {

// 64 MiB at full size.
size_t file_bytes() {
    static const size_t n = wl::scaled(size_t{64} << 20, size_t{1} << 20);
    return n;
}

void transform(const adsm::thread_index &t, const uint32_t *in, uint32_t *out, size_t n) {
    size_t i = adsm::global_x(t);
    if (i < n) out[i] = (in[i] ^ 0x5a5a5a5au) * 2654435761u;
}
const wl::kernel<transform> k("transform");

std::string make_input(const std::string &dir) {
    const size_t bytes = file_bytes();
    std::string path = dir + "/io_pipeline.in";
    std::vector<uint32_t> data(bytes / 4);
    wl::Lcg g(9);
    for (uint32_t &w : data) w = g.next();
    FILE *f = fopen(path.c_str(), "wb");
    if (!f || fwrite(data.data(), 1, bytes, f) != bytes || fclose(f) != 0)
        throw std::runtime_error("cannot write " + path);
    return path;
}

void read_all(const std::string &path, void *buf) {
    const size_t bytes = file_bytes();
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) throw std::runtime_error("cannot open " + path);
    size_t done = 0;
    while (done < bytes) {
        ssize_t n = read(fd, static_cast<char *>(buf) + done, bytes - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    close(fd);
    if (done != bytes) throw std::runtime_error("short read from " + path);
}

void write_all(const std::string &path, const void *buf) {
    const size_t bytes = file_bytes();
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) throw std::runtime_error("cannot create " + path);
    size_t done = 0;
    while (done < bytes) {
        ssize_t n = write(fd, static_cast<const char *>(buf) + done, bytes - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    close(fd);
    if (done != bytes) throw std::runtime_error("short write to " + path);
}

// The checksum of the output file, read back outside the timed part.
double file_checksum(const std::string &path) {
    const size_t bytes = file_bytes();
    std::vector<uint32_t> data(bytes / 4);
    read_all(path, data.data());
    double s = 0;
    for (size_t i = 0; i < data.size(); i += 7) s += data[i] % 1000;
    return s;
}

double reference(const std::string &in) {
    const size_t bytes = file_bytes();
    std::vector<uint32_t> data(bytes / 4);
    read_all(in, data.data());
    double s = 0;
    for (size_t i = 0; i < data.size(); i += 7) s += ((data[i] ^ 0x5a5a5a5au) * 2654435761u) % 1000;
    return s;
}

wl::Result run(wl::Gpu &g, const std::string &scratch) {
    const size_t bytes = file_bytes();
    const size_t n = bytes / 4;
    std::string in = make_input(scratch), out = scratch + "/io_pipeline.out";
    wl::Result r;
    r.reference = reference(in);
    wl::timed_begin();
    if (g.unified()) {
        wl::host_buffer<uint32_t> a(g, n), b(g, n);
        read_all(in, a.data());
        k(g, adsm::blocks_for(n, 256), 256, a.data(), b.data(), n);
        g.sync();
        write_all(out, b.data());
        wl::timed_end();
    } else {
        wl::host_buffer<uint32_t> host(g, n);
        wl::device_buffer<uint32_t> a(g, n), b(g, n);
        read_all(in, host.data());
        g.to_device(a.data(), host.data(), bytes);
        k(g, adsm::blocks_for(n, 256), 256, a.data(), b.data(), n);
        g.to_host(host.data(), b.data(), bytes);
        write_all(out, host.data());
        wl::timed_end();  // before the buffers' frees
    }
    r.checksum = file_checksum(out);
    remove(in.c_str());
    remove(out.c_str());
    return r;
}

wl::Register reg("io_pipeline", "read a 64 MiB file, transform it on the device, write the result", run);

}  // namespace
