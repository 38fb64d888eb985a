"""The management tools a model or a client calls: their manual, their arguments and their answers."""
