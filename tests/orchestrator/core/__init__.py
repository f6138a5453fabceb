"""Tests of orchestrator.core."""
