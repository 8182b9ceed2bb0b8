// TLB reach and miss penalty: a page-stride pointer chase over `pages` pages `stride_mb` apart, one thread. The
// chain always holds kLines lines (512 KB of 128 B lines, far below the L2) whatever the page count: line g lies in
// page g % pages at offset g x 128 B, and the chase visits lines g = 0, 1, 2, ..., so consecutive loads go to
// consecutive pages, round robin, and every line is read once per lap. Its loads are ld.global.cg (L2 hits after
// the untimed lap, the L1 bypassed), so the data reads cost the same at every page count and only the number of
// distinct pages, the translations a TLB must hold, changes: a step in the latency is a TLB level's reach.
#include "geometry.cuh"

constexpr long kLines = 4096;  // lines per chain: 4096 x 128 B = 512 KB of lines, each read once per lap
constexpr long kMaxPages = kLines;
constexpr size_t kFirstSpan = size_t(8) << 30;  // the 2 MB-stride sweep's largest span: allocated at once

// Slot addresses of the chain over `pages` pages `stride` bytes apart from `base`, in chase order.
std::vector<uint64_t> page_slots(uint64_t base, long pages, long stride) {
  std::vector<uint64_t> out(kLines);
  for (long g = 0; g < kLines; ++g) out[g] = base + uint64_t(g % pages) * stride + uint64_t(g) * mem::kLine;
  return out;
}

void run_tlb(const std::string& id, const std::map<std::string, long>& point, int repeats) {
  const long pages = smd::param(point, "pages"), stride_mb = smd::param(point, "stride_mb");
  if (pages < 1 || pages > kMaxPages) smd::fail("pages must be in 1.." + std::to_string(kMaxPages), 2);
  if (stride_mb < 2 || stride_mb % 2) smd::fail("stride_mb must be a multiple of 2 (cudaMalloc's 2 MB page)", 2);
  const long stride = stride_mb << 20;
  std::string why;
  char* base = geo::arena(size_t(pages) * stride, why, kFirstSpan);
  if (!base) return smd::static_point(id, point, why);
  const auto slots = page_slots(reinterpret_cast<uint64_t>(base), pages, stride);
  geo::link(slots);
  // every load of the launch (an untimed lap, n and 2n: 4 laps) reads one 32 B sector through the L2
  const double sectors = 4.0 * kLines;
  geo::measure_laps<LoadCg>(id, point, repeats, slots[0], int(kLines),
                            {{"lts__t_sectors_srcunit_tex_op_read.sum", sectors}});
}

int main(int argc, char** argv) {
  const auto listed = [] { return std::vector{mem::kernel("lap_kernel<LoadCg>", 32, kLines)}; };
  return smd::family_main(argc, argv, {{"tlb_chase", listed, run_tlb}, {"tlb_chase_wide", listed, run_tlb}});
}
