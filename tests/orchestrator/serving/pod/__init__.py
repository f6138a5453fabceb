"""Tests of orchestrator.serving.pod."""
