"""What keeps a student's code in its place: sandbox, cgroup limits, warm kernels, scan, sanitizer, page policy."""
