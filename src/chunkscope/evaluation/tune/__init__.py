"""Tune: the space each strategy declares, the score, the halving plan, the search loop and what it measured."""
