"""Measured detection quality of the content guards over labelled corpora (`mcpward eval
detectors`): confusion counts, rates with Clopper-Pearson intervals, held-out splits.
"""
