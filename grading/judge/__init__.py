"""The judge: every graded test cell runs here, outside the student's kernel, which only serves it.

- names.py: the modules whose objects each side imports itself, and what the read-only cells import from them
  (standard library only, so that nbgrader_config.py loads without torch); wire.py: the data-only format
  (msgpack) and its limits; stored.py: the hashes that dicts and sets stored for their keys (no key's
  ``__hash__`` runs again as its dict crosses); codec.py: values to wire trees and back;
  pairs.py: mutable containers and tensors kept in step on both sides; peer.py: messages,
  re-entrant requests, exceptions. These, and agent.py (the kernel's side), also run in the
  student's kernel: the grader sends their source as a hidden first cell (prelude.py).
- handles.py and remote.py: the judge's side: the student's objects as handles and mirror
  classes, the test's objects lent to the student's code as callbacks, and what a kernel may ask.
- runner.py: one test cell, its namespace and its verdict; server.py: the judge process of one
  student; client.py: the grading process's handle on it; execute.py: nbgrader's steps.
- cores.py: a judge and the kernel it serves run on one CPU core (they take turns; a turn costs less there).
- host.py: a plain-Python kernel for the mutation suite (grading/authoring/harness.py); compare.py: every
  answer of the mutation suite graded in process and through the judge, side by side.
"""
