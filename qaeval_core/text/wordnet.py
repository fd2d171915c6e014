"""WordNet for METEOR's synonym matches, found offline and read the way METEOR needs it.

NLTK's WordNet downloader needs the network, which neither CI nor many users have. Debian's
``wordnet-base`` package (or any WordNet 3.0 folder named by ``QAEVAL_WORDNET_DIR``) has the
database files but lacks the ``lexnames`` file NLTK's reader wants, and nltk 3.10 refuses
symlinks out of its data folder; so the files are copied once into qaeval's cache with a
generated ``lexnames``. NLTK's METEOR looks synonyms up on Porter *stems*, which WordNet does
not index: :class:`StemAwareWordNet` answers those lookups from the lemmas that stem alike.
Without WordNet, :class:`NoSynonyms` lets METEOR run on exact and stem matches alone.
"""

from __future__ import annotations

import os
import shutil
import threading
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["wordnet", "wordnet_present", "wordnet_status", "NoSynonyms", "StemAwareWordNet"]


#: The 45 lexicographer files of WordNet 3.0 (the ``lexnames`` file Debian's package lacks).
_LEXNAMES = (  # noqa: SIM905 - one string keeps the 45 names readable
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute "
    "noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group "
    "noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant "
    "noun.possession noun.process noun.quantity noun.relation noun.shape noun.state "
    "noun.substance noun.time verb.body verb.change verb.cognition verb.communication "
    "verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_LEX_POS = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}
#: Where WordNet 3.0 database files may already be on disk (Debian/Ubuntu ``wordnet-base``).
_WORDNET_DIRS = ("/usr/share/wordnet", "/usr/share/WordNet", "/usr/local/share/wordnet")
_WORDNET_FILES = ("data.noun", "index.noun", "data.verb", "index.verb")
_WN_LOCK = threading.Lock()


def _lexnames_text() -> str:
    return "".join(
        f"{i:02d}\t{name}\t{_LEX_POS[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES)
    )


def _candidate_wordnet_dirs() -> list[Path]:
    dirs: list[Path] = []
    env = os.environ.get("QAEVAL_WORDNET_DIR")
    if env:
        dirs.append(Path(env))
    dirs.extend(Path(d) for d in _WORDNET_DIRS)
    return dirs


def _build_wordnet_copy(src: Path) -> Path:
    """Copy a WordNet database folder into the qaeval cache as an NLTK corpus folder.

    NLTK reads only below a folder on its data path and refuses symlinks leaving it, and
    Debian's package has no ``lexnames`` file, so the files are copied (once; later runs reuse
    the copy) and ``lexnames`` is written when missing.
    """
    import nltk.data

    from qaeval_core.caches.location import cache_dir

    data_root = cache_dir() / "nltk_data"
    # nltk >= 3.9 only reads corpora under a folder on its data path.
    if str(data_root) not in nltk.data.path:
        nltk.data.path.append(str(data_root))
    dest = data_root / "corpora" / "wordnet"
    if all((dest / f).exists() for f in ("lexnames", "index.sense", "data.noun")):
        return dest
    tmp = dest.with_name(f"wordnet.tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    for path in src.iterdir():
        if path.is_file():
            shutil.copyfile(path, tmp / path.name)
    if not (tmp / "lexnames").exists():
        (tmp / "lexnames").write_text(_lexnames_text(), encoding="utf-8")
    if not (tmp / "index.sense").exists():
        # Debian's wordnet-base has no sense index; NLTK opens it but synonyms do not need it
        # (only sense-key lookups do), so an empty one suffices.
        (tmp / "index.sense").write_text("", encoding="utf-8")
    if dest.exists():  # an incomplete copy from an older qaeval: replace it
        shutil.rmtree(dest, ignore_errors=True)
    try:
        tmp.rename(dest)
    except OSError:  # another process finished its copy first
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


@lru_cache(maxsize=1)
def wordnet() -> tuple[Any, str]:
    """(WordNet reader or None, a sentence saying where it came from or why it is missing)."""
    problems: list[str] = []
    with _WN_LOCK:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader

        for folder in _candidate_wordnet_dirs():
            if not all((folder / f).is_file() for f in _WORDNET_FILES):
                continue
            try:
                root = _build_wordnet_copy(folder)
                with warnings.catch_warnings():  # no Open Multilingual WordNet: English only
                    warnings.filterwarnings("ignore", "The multilingual functions")
                    reader = WordNetCorpusReader(str(root), None)
                reader.synsets("dog")
                return reader, f"WordNet from {folder}"
            except Exception as exc:  # report it and try the next source
                problems.append(f"{folder}: {exc}")
        try:
            from nltk.corpus import wordnet

            wordnet.ensure_loaded()
            wordnet.synsets("dog")
            return wordnet, "WordNet from NLTK's data path"
        except Exception:  # LookupError, or a broken download
            pass
    where = ", ".join(str(d) for d in _candidate_wordnet_dirs())
    extra = f" ({'; '.join(problems)})" if problems else ""
    return None, (
        f"WordNet not found in {where} or NLTK's data path{extra}: METEOR matched exact words "
        "and Porter stems only. Install it with `apt-get install wordnet-base` or set "
        "QAEVAL_WORDNET_DIR to a WordNet 3.0 folder."
    )


@lru_cache(maxsize=1)
def wordnet_present() -> bool:
    """Cheap check (no loading) that a WordNet source exists, for :meth:`Meteor.config`."""
    if any(all((d / f).is_file() for f in _WORDNET_FILES) for d in _candidate_wordnet_dirs()):
        return True
    try:
        import nltk.data

        nltk.data.find("corpora/wordnet")
        return True
    except LookupError:
        return False


def wordnet_status() -> tuple[bool, str]:
    """Whether METEOR has WordNet synonyms here, and a sentence saying why."""
    reader, note = wordnet()
    return reader is not None, note


class NoSynonyms:
    """Stands in for WordNet in NLTK's METEOR: no synsets, so only exact and stem stages."""

    def synsets(self, _word: str, *_args: Any, **_kwargs: Any) -> list[Any]:
        return []


class _StemSynset:
    """A synset as NLTK's METEOR uses it: only ``lemmas()`` with ``name()``."""

    __slots__ = ("_lemmas",)

    def __init__(self, names: Sequence[str]) -> None:
        self._lemmas = [_StemLemma(n) for n in names]

    def lemmas(self) -> list[_StemLemma]:
        return self._lemmas


class _StemLemma:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def name(self) -> str:
        return self._name


class StemAwareWordNet:
    """WordNet seen through Porter stems, for NLTK's METEOR.

    NLTK's stem stage hands the *stemmed* leftover words to the synonym stage, so plain
    WordNet is asked about "automobil" and finds nothing; METEOR's synonym module (Banerjee &
    Lavie 2005) matches words that share a synset. This wrapper looks a stem up under its
    likely surface forms (the stem, +e, i->y, +s) and returns the synonyms' stems, which is
    what the stemmed reference words are compared with. Memoised per stem.
    """

    def __init__(self, wordnet: Any, stemmer: Any) -> None:
        self._wn = wordnet
        self._stem = stemmer.stem
        self._memo: dict[str, list[_StemSynset]] = {}

    def synsets(self, word: str, *_args: Any, **_kwargs: Any) -> list[_StemSynset]:
        found = self._memo.get(word)
        if found is None:
            forms = [word, word + "e", word + "s"]
            if word.endswith("i"):
                forms.append(word[:-1] + "y")
            names: set[str] = set()
            for form in forms:
                for synset in self._wn.synsets(form):
                    names.update(lemma.name() for lemma in synset.lemmas())
            stems = sorted({self._stem(n.lower()) for n in names if "_" not in n})
            found = [_StemSynset(stems)] if stems else []
            self._memo[word] = found
        return found
