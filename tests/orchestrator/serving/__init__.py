"""Tests of orchestrator.serving."""
