"""Reading answers as text: how every metric and the judge see a string.

* :mod:`.squad` - SQuAD normalisation (lowercase, punctuation and articles out), tokens,
  n-grams; :mod:`.normalize` - its memoised and column-wise fast forms; :mod:`.fingerprint` -
  a cheap proof that two strings cannot normalise alike;
* :mod:`.robust` - the string steps of the ``robust`` profile (markdown, HTML, citations,
  mojibake, LaTeX, numbers and dates); :mod:`.profiles` - the normalisation profiles
  (``squad`` / ``robust``) every lexical metric goes through, and the reader text;
* :mod:`.quantities` - numbers and units as answers write them;
* :mod:`.wordnet` - offline WordNet for METEOR's synonyms.

Pure functions of strings: nothing here loads a model (:mod:`qaeval_core.models`) or scores.
"""
