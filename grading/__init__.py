"""The instructor's tooling: build release/ and solutions/, grade submissions, export grades.

It runs from the repository root (``python -m grading.main``) and is not part of the ``course``
package that students install.
"""
