"""KernelGraph's thin agent: kernel tasks, backends, proposers and the optimize loop."""
