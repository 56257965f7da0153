"""``python -m ace_helpers.chapters.core_inflation``: retrain and store the dimension-matched reference (:func:`main`)."""

from ace_helpers.chapters.core_inflation import main

if __name__ == "__main__":
    main()
