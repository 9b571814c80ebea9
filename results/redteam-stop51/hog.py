"""A memory-bandwidth hog (another job's tests, as this shared machine has): copies 64 MiB arrays
until killed. Stands for a slow period of the host while a parent's figure is set."""
import numpy as np
a = np.ones(16 << 20, dtype=np.float32); b = np.empty_like(a)
while True:
    np.copyto(b, a); np.copyto(a, b)
