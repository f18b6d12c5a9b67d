"""The groups of a lab 03 problem on the device, shared by the lab's peers.

labrun sends the groups as GroupsOf decodes them ([M, N, K] each, empty groups included). The
inputs live in three flat arenas, group after group, each matrix row-major: A_g (M×K), B_g (K×N)
and C_g (M×N) — when every group shares N and K, exactly a MoE layer's token matrix, its stacked
expert weights and its output. The reference is a float64 product per group on the device.
"""


class Groups:
    def __init__(self, peer):
        torch = peer.torch
        self.torch = torch
        self.shapes = [tuple(g) for g in peer.params["groups"]]
        self.dtype = torch.bfloat16 if peer.params["data"] == "bf16" else torch.float32
        self.a_off, self.b_off, self.c_off = [], [], []
        na = nb = nc = 0
        for m, n, k in self.shapes:
            self.a_off.append(na)
            self.b_off.append(nb)
            self.c_off.append(nc)
            na, nb, nc = na + m * k, nb + k * n, nc + m * n
        self.a = peer.uniform((max(na, 1),), self.dtype)
        self.b = peer.uniform((max(nb, 1),), self.dtype)
        self.c = torch.full((max(nc, 1),), float("nan"), dtype=self.dtype, device=peer.device)
        self.c_size = nc

    def a_of(self, g):
        m, _, k = self.shapes[g]
        return self.a[self.a_off[g]:self.a_off[g] + m * k].view(m, k)

    def b_of(self, g):
        _, n, k = self.shapes[g]
        return self.b[self.b_off[g]:self.b_off[g] + k * n].view(k, n)

    def c_of(self, g, c=None):
        m, n, _ = self.shapes[g]
        c = self.c if c is None else c
        return c[self.c_off[g]:self.c_off[g] + m * n].view(m, n)

    def reference(self):
        """C of every group in float64, flat as the arena."""
        torch = self.torch
        ref = torch.zeros(self.c_size, dtype=torch.float64, device=self.a.device)
        for g in range(len(self.shapes)):
            m, n, _ = self.shapes[g]
            if m and n:
                ref[self.c_off[g]:self.c_off[g] + m * n] = (self.a_of(g).double() @ self.b_of(g).double()).reshape(-1)
        return ref

    def shared_nk(self):
        return len(self.shapes) > 0 and all(s[1:] == self.shapes[0][1:] for s in self.shapes)

    def flops(self):
        return sum(2 * m * n * k for m, n, k in self.shapes)
