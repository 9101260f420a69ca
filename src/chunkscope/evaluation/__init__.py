"""Evaluation: the questions, their answer regions, metrics and verdicts, baselines, the probe, the sweep and tune."""
