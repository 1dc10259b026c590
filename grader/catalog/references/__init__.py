"""What the expected values are computed with, in the parent only: PyTorch's own modules holding
the student's weights (torch_modules), the course's equations with switches for the typical
mistakes (equations), the grader's own byte-level BPE (bpe), and the one float64 wrapper
(float64) every reference and mistake computes through."""
