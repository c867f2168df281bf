"""The warm process's own bookkeeping (grading/isolation/zygote.py), without starting a kernel."""

from __future__ import annotations

import json
import socket

from grading.isolation import zygote


def test_each_kernel_reads_a_connection_file_of_its_own(tmp_path, monkeypatch):
    # Without the sandbox the warm processes of one run share a home: a kernel that read the file another warm
    # process had just written there would listen on that kernel's ports, and its own client would wait in vain.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(zygote.os, "fork", lambda: 4242)  # The parent's side only: no kernel starts.
    first = zygote._fork_kernel({"shell_port": 1, "key": "a"}, [], None)
    second = zygote._fork_kernel({"shell_port": 2, "key": "b"}, [], None)
    assert first[0] == second[0] == 4242 and first[1] != second[1]
    assert json.loads(open(first[1]).read())["key"] == "a" and json.loads(open(second[1]).read())["key"] == "b"
    assert all(path.startswith(str(tmp_path)) for path in (first[1], second[1]))


def test_without_the_sandbox_connection_files_go_to_the_warm_process_s_own_folder(tmp_path):
    # Not the grader's home: a grading process killed at a student's time limit left them there. The grading
    # command removes the warm process's folder (a folder of the run's) whatever happened.
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "warm.sock"))
        assert zygote.connection_folder(listener, sandboxed=False) == str(tmp_path)
        assert zygote.connection_folder(listener, sandboxed=True) is None  # The sandbox's home, emptied each time.
    with socket.socket(socket.AF_UNIX) as unbound:
        assert zygote.connection_folder(unbound, sandboxed=False) is None
