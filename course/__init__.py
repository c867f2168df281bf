"""Helper package of the course "KV Cache Eviction & Scheduling: from formulas to GPU tensors".

Students install it in the first cell of every notebook. It holds the course's plumbing only
(device detection, test helpers, traces, the replay engine, plots); the exercises' solutions are
never here.
"""

__version__ = "0.1.0"
