// Sub-core binding: is a warp bound to sub-partition %warpid % 4? Warp 0 of an 8-warp CTA and one
// partner warp run ILP-8 chains on one pipe; sharing a sub-partition halves each warp's issue rate.
// warpid_map reads %warpid of every warp of one CTA: (warpid - warp 0's) % 4 against the index % 4.
#include "sched.cuh"

namespace {

constexpr int kCtaWarps = 8;
constexpr int kIlp = 8;
constexpr int kIters = 16;  // x kDepth x kIlp = 32768 instructions per warp

template <class Op>
void pair(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long partner = smd::param(point, "partner");
  if (partner < 0 || partner >= kCtaWarps) smd::fail("partner=" + std::to_string(partner) + " out of range 0..7", 2);
  const unsigned long long active = 1ull | (1ull << partner);
  sched::run_pipe_loop<Op, kIlp>(1, kCtaWarps, kIters, active);  // untimed: module load, icache
  const double ops = double(kIters) * sched::kDepth * kIlp;
  std::vector<double> warp0, both, partner_id, same, mhz;
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    std::vector<sched::WarpStamp> st;
    {
      smd::NvtxRange range(smd::range_name(id, point, "main"));
      st = sched::run_pipe_loop<Op, kIlp>(1, kCtaWarps, kIters, active);
    }
    const auto& a = st[0];
    const auto& b = st[partner];
    warp0.push_back(ops / double(a.s.c1 - a.s.c0));
    std::vector<smd::Stamp> spans{a.s, b.s};
    const smd::Span s = smd::span(spans);
    both.push_back((partner ? 2 : 1) * ops / s.cycles);
    partner_id.push_back(b.warpid);
    same.push_back(a.warpid % 4 == b.warpid % 4);
    mhz.push_back(s.mhz);
    smid = s.smid;
  }
  smd::Record rec{id, point, "throughput", "warp_inst/cycle/warp", warp0, 0, kIters, smd::median(mhz), smid};
  smd::emit(rec);
  rec.metric = "pair_throughput", rec.unit = "warp_inst/cycle", rec.samples = both;
  smd::emit(rec);
  rec.metric = "partner_warpid", rec.unit = "id", rec.samples = partner_id;
  smd::emit(rec);
  rec.metric = "same_subpartition", rec.unit = "fraction", rec.samples = same;
  smd::emit(rec);
}

void warpid_map(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long warps = smd::param(point, "warps");
  if (warps < 1 || warps > 32) smd::fail("warps=" + std::to_string(warps) + " out of range 1..32", 2);
  std::vector<double> match, equal, first;
  int smid = -1;
  for (int r = 0; r < repeats; ++r) {
    std::vector<sched::WarpStamp> st;
    {
      smd::NvtxRange range(smd::range_name(id, point, "main"));
      st = sched::run_pipe_loop<Ffma, 1>(1, int(warps), 1, ~0ull);
    }
    const unsigned w0 = st[0].warpid;  // slots may start anywhere: compare against warp 0's
    int m = 0, e = 0;
    for (int w = 0; w < warps; ++w) m += (st[w].warpid - w0) % 4 == unsigned(w) % 4, e += int(st[w].warpid) == w;
    match.push_back(double(m) / warps);
    equal.push_back(double(e) / warps);
    first.push_back(w0);
    smid = int(st[0].s.smid);
  }
  smd::Record rec{id, point, "subpartition_match", "fraction", match, 0, 1, 0, smid};
  smd::emit(rec);
  rec.metric = "warpid_equal", rec.unit = "fraction", rec.samples = equal;
  smd::emit(rec);
  rec.metric = "warp0_warpid", rec.unit = "id", rec.samples = first;
  smd::emit(rec);
}

template <class Op, int ILP>
std::vector<smd::KernelInfo> one_kernel() {
  return {sched::pipe_kernel<Op, ILP>({}, ILP == 1 ? 1 : kIters)};
}

}  // namespace

int main(int argc, char** argv) {
  return smd::family_main(argc, argv,
                          {{"subcore_ffma", one_kernel<Ffma, kIlp>, pair<Ffma>},
                           {"subcore_mufu", one_kernel<Ex2, kIlp>, pair<Ex2>},
                           {"warpid_map", one_kernel<Ffma, 1>, warpid_map}});
}
