"""The authoring tools: build, sync, given cells, shared code, README tables, the mutation suite's harness."""
