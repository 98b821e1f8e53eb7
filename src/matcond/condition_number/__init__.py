"""The condition-number paper: targets, models, strategies, optimisers, the training loop,
the components, the trial runner, the first-order theory and the depth formula.
"""
