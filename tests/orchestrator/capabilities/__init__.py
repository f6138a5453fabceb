"""Tests of orchestrator.capabilities."""
