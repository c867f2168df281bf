"""The grading pipeline, a module per stage: grading/pipeline/stages.py lists them in order."""
