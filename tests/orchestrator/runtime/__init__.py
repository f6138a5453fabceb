"""Tests of orchestrator.runtime."""
