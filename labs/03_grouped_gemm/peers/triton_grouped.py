"""Lab 03's Triton peers: a persistent grouped GEMM written in Triton, static or dynamic schedule.

As in the chapter's persistent kernels and Triton's grouped GEMM tutorial, the grid is one
program per SM and the tiles of all groups form one list. Every program first turns the groups'
sizes into the prefix sums of their tile counts (the chapter's kl_tile_prefix_groups) and finds
the group of a tile by comparing it with them (kl_find_group). The two schedules differ in one
place, where a program gets its next tile number:
  static   program p takes tiles p, p + P, p + 2P, … (P programs): kernel 02's round robin;
  dynamic  a program that is free takes the next number from a counter in global memory
           (tl.atomic_add), and the last program to leave sets the counter back to 0 for the next
           launch: kernel 03's scheduler (kl_next_tile, kl_scheduler_done). With lpt the host
           hands the groups over longest tile first (kernel 03's dynamic_lpt).
Each tile is lab 02's Triton GEMM (BM×BN, stepping K by BK, num_stages deep, in bands of tile
rows), bf16 on the tensor cores with fp32 accumulation, or fp32 with input_precision="ieee".
Every group's matrices are row-major in three flat arenas (groups.py).

Sizes and offsets travel in units of ALIGN elements (16 bytes) when every group allows it: a
size loaded from memory tells the compiler nothing, so without that it must assume any row may
start at any element and gives up 16-byte vector loads and cp.async; k = ks[g] * ALIGN shows it
that every row of A, B and C starts on a 16-byte boundary.
"""

import klpeer

import triton
import triton.language as tl

from groups import Groups

PARAMS = ("bm", "bn", "bk", "warps", "stages", "per_sm", "band", "dynamic", "lpt")


@triton.jit
def tile_coords(local, tiles_m, tiles_n, BAND: tl.constexpr):
    """The chapter's kl_tile_coords: the local-th tile of a group in bands of BAND tile rows."""
    per_band = BAND * tiles_n
    band = local // per_band
    first = band * BAND
    rows = tl.minimum(tiles_m - first, BAND)
    r = local - band * per_band
    return first + r % rows, r // rows


@triton.jit
def gemm_tile(a, b, c, m, n, k, tm, tn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr):
    """Tile (tm, tn) of C = A·B for one group: A m×k, B k×n, C m×n, row-major."""
    rm = tm * BM + tl.arange(0, BM)
    rn = tn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a + rm[:, None].to(tl.int64) * k + rk[None, :]
    b_ptrs = b + rk[:, None].to(tl.int64) * n + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, k, BK):
        x = tl.load(a_ptrs, mask=(rm[:, None] < m) & (rk[None, :] + k0 < k), other=0.0)
        y = tl.load(b_ptrs, mask=(rk[:, None] + k0 < k) & (rn[None, :] < n), other=0.0)
        if IEEE:
            acc = tl.dot(x, y, acc, input_precision="ieee")
        else:
            acc = tl.dot(x, y, acc)
        a_ptrs += BK
        b_ptrs += BK * n
    c_ptrs = c + rm[:, None].to(tl.int64) * n + rn[None, :]
    tl.store(c_ptrs, acc.to(c.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


@triton.jit
def grouped_gemm(a_ptr, b_ptr, c_ptr, a_off, b_off, c_off, ms, ns, ks, G, counter,
                 DYNAMIC: tl.constexpr, PROGRAMS: tl.constexpr, GP: tl.constexpr, ALIGN: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, BAND: tl.constexpr,
                 IEEE: tl.constexpr):
    # The tile counts of all groups (GP ≥ G lanes) and their prefix sums: group g owns tiles
    # ends[g] - tiles[g] … ends[g] - 1; an empty group owns none.
    lanes = tl.arange(0, GP)
    tiles = tl.cdiv(tl.load(ms + lanes, mask=lanes < G, other=0), BM) * \
        tl.cdiv(tl.load(ns + lanes, mask=lanes < G, other=0) * ALIGN, BN)
    ends = tl.cumsum(tiles, axis=0)
    total = tl.sum(tiles, axis=0)

    if DYNAMIC:
        tile = tl.atomic_add(counter, 1)
    else:
        tile = tl.program_id(0)
    while tile < total:
        # The group of this tile: the number of groups whose tiles all come before it.
        before = ends <= tile
        g = tl.sum(before.to(tl.int32), axis=0)
        first = tl.sum(tl.where(before, tiles, 0), axis=0)
        m = tl.load(ms + g)
        n = tl.load(ns + g) * ALIGN
        k = tl.load(ks + g) * ALIGN
        tiles_m = tl.cdiv(m, BM)
        tm, tn = tile_coords(tile - first, tiles_m, tl.cdiv(n, BN), BAND)
        gemm_tile(a_ptr + tl.load(a_off + g) * ALIGN, b_ptr + tl.load(b_off + g) * ALIGN,
                  c_ptr + tl.load(c_off + g) * ALIGN, m, n, k, tm, tn, BM, BN, BK, IEEE)
        if DYNAMIC:
            tile = tl.atomic_add(counter, 1)
        else:
            tile += PROGRAMS
    if DYNAMIC:
        # Every program took its last number before it counts itself out, so the last one out
        # knows nobody touches counter[0] again in this launch: it resets both for the next.
        if tl.atomic_add(counter + 1, 1) == PROGRAMS - 1:
            tl.atomic_xchg(counter, 0)
            tl.atomic_xchg(counter + 1, 0)


def longest_first(shapes):
    """The chapter's LongestFirst (problem.go): larger K first, then larger M·N; stable."""
    return sorted(range(len(shapes)), key=lambda g: (-shapes[g][2], -shapes[g][0] * shapes[g][1]))


def run(peer):
    torch = peer.torch
    vp = peer.req.get("variant_params") or {}
    unknown = sorted(set(vp) - set(PARAMS))
    if unknown:
        raise ValueError("unknown params %s for triton_grouped.py: it reads %s" % (unknown, ", ".join(PARAMS)))
    gs = Groups(peer)
    dev = peer.device
    bf16 = gs.dtype == torch.bfloat16
    dynamic, lpt = bool(vp.get("dynamic", 0)), bool(vp.get("lpt", 0))
    bm, bn, bk = vp.get("bm", 128), vp.get("bn", 128), vp.get("bk", 64 if bf16 else 32)

    # The groups in the order the schedule hands them out; an empty group has no tiles, and its
    # sizes are never read past the tile count.
    order = longest_first(gs.shapes) if lpt else list(range(len(gs.shapes)))
    live = [g for g in order if gs.shapes[g][0] and gs.shapes[g][1]]
    align = 16 // gs.a.element_size()
    if any(x % align for g in live for x in (gs.shapes[g][1], gs.shapes[g][2], gs.a_off[g], gs.b_off[g], gs.c_off[g])):
        align = 1

    def column(values, dtype):
        return torch.tensor(values, dtype=dtype, device=dev)

    def per_group(f):
        return [f(g) if g in live else 0 for g in order]

    ms = column(per_group(lambda g: gs.shapes[g][0]), torch.int32)
    ns, ks = (column(per_group(lambda g, i=i: gs.shapes[g][i] // align), torch.int32) for i in (1, 2))
    a_off, b_off, c_off = (column(per_group(lambda g, o=o: o[g] // align), torch.int64) for o in (gs.a_off, gs.b_off, gs.c_off))
    counter = torch.zeros(2, dtype=torch.int32, device=dev)  # the dynamic schedule's; 0 between launches
    programs = torch.cuda.get_device_properties(dev).multi_processor_count * vp.get("per_sm", 1)
    lanes = max(16, triton.next_power_of_2(max(len(order), 1)))

    def launch():
        grouped_gemm[(programs,)](gs.a, gs.b, gs.c, a_off, b_off, c_off, ms, ns, ks, len(order), counter,
                                  DYNAMIC=dynamic, PROGRAMS=programs, GP=lanes, ALIGN=align,
                                  BM=bm, BN=bn, BK=bk, BAND=vp.get("band", 8), IEEE=not bf16,
                                  num_warps=vp.get("warps", 8), num_stages=vp.get("stages", 3))

    launch()
    schedule = "dynamic (atomic tile counter%s)" % (", longest first" if lpt else "") if dynamic else "static round robin"
    what = "bf16, fp32 accumulation" if bf16 else "fp32, input_precision=ieee"
    if peer.check(gs.c[:gs.c_size], gs.reference(),
                  "Triton persistent grouped GEMM, %s schedule, %d×%d×%d (%s), against a float64 product per group"
                  % (schedule, bm, bn, bk, what)):
        peer.time(launch)


if __name__ == "__main__":
    klpeer.main(run, needs=("torch", "triton"))
