// What the driver says about the links: per pair of GPUs, CUDA's peer access, native atomics and performance
// rank, NVML's P2P read / NVLink status and topology level; per GPU, NVML's active NVLinks and their version.
// CUDA devices are matched to NVML handles by UUID (NVML ignores CUDA_VISIBLE_DEVICES). NVML is opened at run
// time (dlopen of the driver's libnvidia-ml.so.1), so the family builds where neither nvml.h nor the library is.
#include <dlfcn.h>

#include "../common/nvml.cuh"
#include "interconnect.cuh"

// The NVML ABI this family uses (nvml.h: enums are int, handles opaque pointers).
using NvmlDevice = void*;
constexpr int kNvmlSuccess = 0;
constexpr int kP2pCapsRead = 0, kP2pCapsNvlink = 2;  // NVML_P2P_CAPS_INDEX_READ / _NVLINK
constexpr int kP2pStatusOk = 0;                      // NVML_P2P_STATUS_OK
constexpr int kFeatureEnabled = 1;                   // NVML_FEATURE_ENABLED
constexpr unsigned kMaxLinks = 36;                   // NVML_NVLINK_MAX_LINKS of current nvml.h (18 before)

struct Nvml {
  int (*init)();
  const char* (*error)(int);
  int (*by_uuid)(const char*, NvmlDevice*);
  int (*p2p)(NvmlDevice, NvmlDevice, int, int*);
  int (*ancestor)(NvmlDevice, NvmlDevice, int*);
  int (*link_state)(NvmlDevice, unsigned, int*);
  int (*link_version)(NvmlDevice, unsigned, unsigned*);

  // A failed NVML call: one line naming it and NVML's reason.
  void check(int ret, const char* what) const {
    if (ret != kNvmlSuccess) smd::fail(std::string(what) + ": " + error(ret));
  }
};

template <class F>
void bind(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) smd::fail(std::string("libnvidia-ml.so.1 lacks ") + name + ": driver too old for this family");
}

const Nvml& nvml() {
  static const Nvml n = [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!lib) smd::fail(std::string("cannot open NVML (") + dlerror() + "): install the NVIDIA driver's libnvidia-ml");
    Nvml x{};
    bind(lib, x.init, "nvmlInit_v2");
    bind(lib, x.error, "nvmlErrorString");
    bind(lib, x.by_uuid, "nvmlDeviceGetHandleByUUID");
    bind(lib, x.p2p, "nvmlDeviceGetP2PStatus");
    bind(lib, x.ancestor, "nvmlDeviceGetTopologyCommonAncestor");
    bind(lib, x.link_state, "nvmlDeviceGetNvLinkState");
    bind(lib, x.link_version, "nvmlDeviceGetNvLinkVersion");
    x.check(x.init(), "nvmlInit_v2");
    return x;
  }();
  return n;
}

// The NVML handle of CUDA device `dev`, found by its UUID.
NvmlDevice handle(int dev) {
  const std::string uuid = smd::nvml_uuid(dev);
  NvmlDevice h = nullptr;
  nvml().check(nvml().by_uuid(uuid.c_str(), &h), ("nvmlDeviceGetHandleByUUID(" + uuid + ")").c_str());
  return h;
}

void emit_value(const std::string& id, const std::map<std::string, long>& point, const char* metric, double v,
                const char* unit) {
  smd::Record rec{id, point, metric, unit, {v}};
  smd::emit(rec);
}

// GPU indices without peer access or warm-up (this family launches nothing): false and a static row if absent.
bool devices(const std::string& id, const std::map<std::string, long>& point, const char* ka, const char* kb, int& a,
             int& b) {
  const int base = ic::base_device(), n = ic::device_count();
  const long ia = smd::param(point, ka), ib = kb ? smd::param(point, kb) : ia;
  if (ia < 0 || ib < 0) smd::fail("GPU indices must be >= 0", 2);
  if (std::max(ia, ib) >= n) {
    smd::static_point(id, point, "needs " + std::to_string(std::max(ia, ib) + 1) + " GPUs; " + std::to_string(n) +
                                      " present");
    return false;
  }
  a = int((base + ia) % n), b = int((base + ib) % n);
  return true;
}

void run_pair(const std::string& id, const std::map<std::string, long>& point, int) {
  int a = 0, b = 0;
  if (!devices(id, point, "src", "dst", a, b)) return;
  if (a == b) {
    smd::static_point(id, point, "src == dst: a GPU is not its own peer");
    return;
  }
  int can = 0, atomics = 0, rank = 0;
  SMD_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
  SMD_CHECK(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b));
  SMD_CHECK(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, a, b));
  const NvmlDevice ha = handle(a), hb = handle(b);
  int read = 0, link = 0, level = 0;
  nvml().check(nvml().p2p(ha, hb, kP2pCapsRead, &read), "nvmlDeviceGetP2PStatus(READ)");
  nvml().check(nvml().p2p(ha, hb, kP2pCapsNvlink, &link), "nvmlDeviceGetP2PStatus(NVLINK)");
  nvml().check(nvml().ancestor(ha, hb, &level), "nvmlDeviceGetTopologyCommonAncestor");
  emit_value(id, point, "cuda_peer_access", can, "bool");
  emit_value(id, point, "cuda_native_atomics", atomics, "bool");
  emit_value(id, point, "cuda_performance_rank", rank, "rank");
  emit_value(id, point, "nvml_p2p_read", read == kP2pStatusOk, "bool");
  emit_value(id, point, "nvml_p2p_nvlink", link == kP2pStatusOk, "bool");
  emit_value(id, point, "topology_level", level, "nvmlGpuTopologyLevel_t");
}

// Links 0..kMaxLinks-1 whose state NVML reports enabled; a link index past the GPU's links is an NVML error
// (invalid argument / not supported) and counts as absent, as on a GPU without NVLink.
void run_links(const std::string& id, const std::map<std::string, long>& point, int) {
  int a = 0, unused = 0;
  if (!devices(id, point, "gpu", nullptr, a, unused)) return;
  const NvmlDevice h = handle(a);
  int active = 0;
  unsigned version = 0;
  for (unsigned l = 0; l < kMaxLinks; ++l) {
    int state = 0;
    if (nvml().link_state(h, l, &state) != kNvmlSuccess || state != kFeatureEnabled) continue;
    ++active;
    unsigned v = 0;
    nvml().check(nvml().link_version(h, l, &v), "nvmlDeviceGetNvLinkVersion");
    version = std::max(version, v);
  }
  emit_value(id, point, "nvlinks_active", active, "links");
  emit_value(id, point, "nvlink_version", version, "nvmlNvlinkVersion_t");
}

int main(int argc, char** argv) {
  const auto none = [] { return std::vector<smd::KernelInfo>{}; };
  return smd::family_main(argc, argv, {{"p2p_link", none, run_pair}, {"nvlink_state", none, run_links}});
}
