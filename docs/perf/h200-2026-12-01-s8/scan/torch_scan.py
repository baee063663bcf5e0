import torch
def timed(fn, reps=20):
    fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = 1e9
    for _ in range(reps):
        s.record(); fn(); e.record(); e.synchronize()
        best = min(best, s.elapsed_time(e) / 1e3)
    return best
n = 1 << 28
x = torch.ones(n, dtype=torch.int32, device="cuda"); y = torch.empty_like(x)
s = timed(lambda: torch.cumsum(x, 0, dtype=torch.int32, out=y))
print(f"torch,exclusive_scan,u32 n=2^28,{s:.6f},{2*n*4/s/1e9:.2f},GB/s")
s = timed(lambda: y.copy_(x))
print(f"torch,copy,u32 n=2^28,{s:.6f},{2*n*4/s/1e9:.2f},GB/s")
del x, y
m = n // 2
x = torch.ones(m, dtype=torch.int64, device="cuda"); y = torch.empty_like(x)
s = timed(lambda: torch.cumsum(x, 0, dtype=torch.int64, out=y))
print(f"torch,exclusive_scan,u64 n=2^27,{s:.6f},{2*m*8/s/1e9:.2f},GB/s")
