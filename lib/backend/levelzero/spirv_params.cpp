#include "backend/levelzero/spirv_params.h"

#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "backend/kernel.h"

namespace adsm::levelzero {
namespace {

enum Op : uint32_t {
    kOpMemoryModel = 14,
    kOpEntryPoint = 15,
    kOpTypeBool = 20,
    kOpTypeInt = 21,
    kOpTypeFloat = 22,
    kOpTypeVector = 23,
    kOpTypeArray = 28,
    kOpTypeStruct = 30,
    kOpTypePointer = 32,
    kOpConstant = 43,
    kOpFunction = 54,
    kOpFunctionParameter = 55,
    kOpDecorate = 71,
};
constexpr uint32_t kExecutionModelKernel = 6;
constexpr uint32_t kAddressingPhysical32 = 1;
constexpr uint32_t kStorageWorkgroup = 4;  // __local
constexpr uint32_t kDecorationFuncParamAttr = 38;
constexpr uint32_t kFuncParamAttrByVal = 2;

struct Type {
    uint32_t op = 0;
    uint32_t width = 0;     // int, float: bits; vector: components
    uint32_t element = 0;   // vector, array, pointer: the element or pointee
    uint32_t length = 0;    // array: the id of its length constant
    uint32_t storage = 0;   // pointer
    std::vector<uint32_t> members;
};

Type type(uint32_t op, uint32_t width = 0, uint32_t element = 0, uint32_t length = 0, uint32_t storage = 0) {
    Type t;
    t.op = op;
    t.width = width;
    t.element = element;
    t.length = length;
    t.storage = storage;
    return t;
}

struct Module {
    uint32_t pointer_size = 8;
    std::unordered_map<uint32_t, Type> types;
    std::unordered_map<uint32_t, uint64_t> constants;
    std::unordered_map<uint32_t, std::vector<uint32_t>> params;  // function -> its parameters' ids
    std::unordered_map<uint32_t, uint32_t> param_types;          // parameter -> its type
    std::unordered_set<uint32_t> by_value;
    uint32_t function = 0;  // the kernel's
};

struct Layout {
    uint64_t size = 0, align = 1;
};

// Size and alignment of a type as OpenCL C lays it out; size 0: unknown.
Layout layout_of(const Module &m, uint32_t id, int depth = 0) {
    auto it = m.types.find(id);
    if (it == m.types.end() || depth > 32) return {};
    const Type &t = it->second;
    switch (t.op) {
    case kOpTypeBool:
        return {1, 1};
    case kOpTypeInt:
    case kOpTypeFloat:
        return t.width % 8 ? Layout{} : Layout{t.width / 8, t.width / 8};
    case kOpTypePointer:
        return {m.pointer_size, m.pointer_size};
    case kOpTypeVector: {
        Layout e = layout_of(m, t.element, depth + 1);
        uint64_t n = t.width == 3 ? 4 : t.width;
        return e.size ? Layout{e.size * n, e.size * n} : Layout{};
    }
    case kOpTypeArray: {
        Layout e = layout_of(m, t.element, depth + 1);
        auto n = m.constants.find(t.length);
        if (!e.size || n == m.constants.end()) return {};
        return {e.size * n->second, e.align};
    }
    case kOpTypeStruct: {
        Layout s;
        for (uint32_t member : t.members) {
            Layout f = layout_of(m, member, depth + 1);
            if (!f.size) return {};
            s.size = (s.size + f.align - 1) / f.align * f.align + f.size;
            if (f.align > s.align) s.align = f.align;
        }
        s.size = (s.size + s.align - 1) / s.align * s.align;
        return s;
    }
    default:
        return {};  // images, samplers, events: sized by the program
    }
}

}  // namespace

bool spirv_kernel_params(const void *image, size_t size, const char *name, std::vector<uint32_t> *sizes) {
    if (!image || size < 20 || size % 4) return false;
    std::vector<uint32_t> w(size / 4);
    memcpy(w.data(), image, size);
    if (w[0] != kSpirvMagic) return false;
    Module m;
    uint32_t last_function = 0;
    for (size_t at = 5; at < w.size();) {
        uint32_t count = w[at] >> 16, op = w[at] & 0xffff;
        if (count == 0 || count > w.size() - at) return false;
        const uint32_t *a = &w[at + 1];  // operands
        uint32_t n = count - 1;
        switch (op) {
        case kOpMemoryModel:
            if (n >= 1 && a[0] == kAddressingPhysical32) m.pointer_size = 4;
            break;
        case kOpEntryPoint:
            if (n >= 3 && a[0] == kExecutionModelKernel) {
                const char *s = reinterpret_cast<const char *>(a + 2);
                size_t room = (n - 2) * 4;
                if (strnlen(s, room) < room && strcmp(s, name) == 0) m.function = a[1];
            }
            break;
        case kOpTypeBool:
            if (n >= 1) m.types[a[0]] = type(op);
            break;
        case kOpTypeInt:
        case kOpTypeFloat:
            if (n >= 2) m.types[a[0]] = type(op, a[1]);
            break;
        case kOpTypeVector:
            if (n >= 3) m.types[a[0]] = type(op, a[2], a[1]);
            break;
        case kOpTypeArray:
            if (n >= 3) m.types[a[0]] = type(op, 0, a[1], a[2]);
            break;
        case kOpTypePointer:
            if (n >= 3) m.types[a[0]] = type(op, 0, a[2], 0, a[1]);
            break;
        case kOpTypeStruct:
            if (n >= 1) {
                m.types[a[0]] = type(op);
                m.types[a[0]].members.assign(a + 1, a + n);
            }
            break;
        case kOpConstant:
            if (n >= 3) m.constants[a[1]] = a[2] | (n >= 4 ? uint64_t{a[3]} << 32 : 0);
            break;
        case kOpFunction:
            last_function = n >= 2 ? a[1] : 0;
            break;
        case kOpFunctionParameter:
            if (n >= 2 && last_function) {
                m.params[last_function].push_back(a[1]);
                m.param_types[a[1]] = a[0];
            }
            break;
        case kOpDecorate:
            if (n >= 3 && a[1] == kDecorationFuncParamAttr && a[2] == kFuncParamAttrByVal) m.by_value.insert(a[0]);
            break;
        default:
            break;
        }
        at += count;
    }
    if (!m.function) return false;
    sizes->clear();
    for (uint32_t p : m.params[m.function]) {
        auto t = m.types.find(m.param_types[p]);
        if (t == m.types.end()) return false;
        Layout l;
        if (m.by_value.count(p) && t->second.op == kOpTypePointer) l = layout_of(m, t->second.element);
        else if (!(t->second.op == kOpTypePointer && t->second.storage == kStorageWorkgroup)) l = layout_of(m, t->first);
        sizes->push_back(static_cast<uint32_t>(l.size));  // 0 is kUnknownParamSize
    }
    static_assert(kUnknownParamSize == 0, "an unknown size reads as 0");
    return true;
}

}  // namespace adsm::levelzero
