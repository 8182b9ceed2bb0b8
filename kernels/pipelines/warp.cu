// Warp-level instruction table: SHFL, VOTE, MATCH, REDUX. Every lane runs the chain (full mask).
#include "ops.cuh"

// x = shfl(x, lane from x): each step's result is both the next value and the next source lane (or offset), so
// the shuffles form one dependent chain that ptxas cannot fold (a lane operand it cannot know).
struct ShflIdx : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("shfl.sync.idx.b32 %0, %0, %0, 0x1f, 0xffffffff;" : "+r"(x));
    return x;
  }
};

struct ShflBfly : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("shfl.sync.bfly.b32 %0, %0, %0, 0x1f, 0xffffffff;" : "+r"(x));
    return x;
  }
};

struct ShflUp : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("shfl.sync.up.b32 %0, %0, %0, 0x0, 0xffffffff;" : "+r"(x));
    return x;
  }
};

struct ShflDown : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("shfl.sync.down.b32 %0, %0, %0, 0x1f, 0xffffffff;" : "+r"(x));
    return x;
  }
};

// x = ballot(x & 1): VOTE takes a predicate, so each step is a LOP3/ISETP to the predicate then the VOTE.
struct VoteBallot : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("{.reg .pred p; .reg .b32 t; and.b32 t, %0, 1; setp.ne.u32 p, t, 0; vote.sync.ballot.b32 %0, p, 0xffffffff;}"
                 : "+r"(x));  // fmt: skip
    return x;
  }
};

struct MatchAny : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("match.any.sync.b32 %0, %0, 0xffffffff;" : "+r"(x));
    return x;
  }
};

struct MatchAll : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("match.all.sync.b32 %0, %0, 0xffffffff;" : "+r"(x));
    return x;
  }
};

struct ReduxAdd : U32Op {
  __device__ static T apply(T x, T, T) {
    asm volatile("redux.sync.add.u32 %0, %0, 0xffffffff;" : "+r"(x));
    return x;
  }
};

int main(int argc, char** argv) {
  return smd::chain_main(argc, argv,
                         {SMD_CHAIN_CASE("shfl_idx", ShflIdx), SMD_CHAIN_CASE("shfl_bfly", ShflBfly),
                          SMD_CHAIN_CASE("shfl_up", ShflUp), SMD_CHAIN_CASE("shfl_down", ShflDown),
                          SMD_CHAIN_CASE("vote_ballot", VoteBallot), SMD_CHAIN_CASE("match_any", MatchAny),
                          SMD_CHAIN_CASE("match_all", MatchAll), SMD_CHAIN_CASE("redux_add", ReduxAdd)});
}
