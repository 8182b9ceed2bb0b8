// TLB reach and miss penalty: a page-stride pointer chase over `pages` pages `stride_mb` apart, one thread. The
// chain holds kLines lines (512 KB of 128 B lines, far below the L2), or one line per page past kLines pages (at most
// 4 MB of lines): line g lies in page g % pages at offset (g x 128 B) mod stride, and the chase visits lines g = 0, 1,
// 2, ..., so consecutive loads go to consecutive pages, round robin, every page is touched, and every line is read
// once per lap. Its loads are ld.global.cg (L2 hits after the untimed lap, the L1 bypassed), so the data reads cost
// the same at every page count and only the number of distinct pages, the translations a TLB must hold, changes: a
// step in the latency is a TLB level's reach, a flat curve to the sweep's end a lower bound of it.
#include "geometry.cuh"

constexpr long kLines = 4096;  // lines per chain up to 4096 pages: 512 KB of lines, each read once per lap
constexpr long kMaxPages = 32768;  // one line per page past kLines: at most 4 MB of lines, still L2-resident
// The arena's first size (every profiled point fits it: under ncu the process allocates no more), and its one growth:
// the largest span of the sweeps (32768 x 2 MB, 2048 x 32 MB, 64 x 1 GB), capped at the card's free memory
constexpr size_t kFirstSpan = size_t(8) << 30, kMostSpan = size_t(64) << 30;

// Lines of the chain over `pages` pages: kLines, or the pages rounded up to whole loop bodies of 32 loads.
long chain_lines(long pages) { return std::max(kLines, (pages + 31) / 32 * 32); }

// Slot addresses of the chain over `pages` pages `stride` bytes apart from `base`, in chase order.
std::vector<uint64_t> page_slots(uint64_t base, long pages, long stride) {
  std::vector<uint64_t> out(chain_lines(pages));
  for (long g = 0; g < long(out.size()); ++g)
    out[g] = base + uint64_t(g % pages) * stride + uint64_t(g) * mem::kLine % uint64_t(stride);
  return out;
}

void run_tlb(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long pages = smd::param(point, "pages"), stride_mb = smd::param(point, "stride_mb");
  if (pages < 1 || pages > kMaxPages) smd::fail("pages must be in 1.." + std::to_string(kMaxPages), 2);
  if (stride_mb < 2 || stride_mb % 2) smd::fail("stride_mb must be a multiple of 2 (cudaMalloc's 2 MB page)", 2);
  const long stride = stride_mb << 20;
  std::string why;
  char* base = geo::arena(size_t(pages) * stride, why, kFirstSpan, kMostSpan);
  if (!base) return smd::static_point(id, point, why);
  const auto slots = page_slots(reinterpret_cast<uint64_t>(base), pages, stride);
  geo::link(slots);
  // every load of the launch (an untimed lap, n and 2n: 4 laps) reads one 32 B sector through the L2
  const long lines = long(slots.size());
  geo::measure_laps<LoadCg>(id, point, repeats, slots[0], int(lines),
                            {{"lts__t_sectors_srcunit_tex_op_read.sum", 4.0 * lines}});
}

int main(int argc, char** argv) {
  const auto listed = [] { return std::vector{mem::kernel("lap_kernel<LoadCg>", 32, kLines)}; };
  return smd::family_main(argc, argv,
                          {{"tlb_chase", listed, run_tlb},
                           {"tlb_chase_wide", listed, run_tlb},
                           {"tlb_chase_huge", listed, run_tlb}});
}
