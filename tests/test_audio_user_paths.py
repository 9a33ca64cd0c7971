"""What a user of an audio model runs, on neuron against the CPU: the ``automatic-speech-recognition`` and
``text-to-speech`` pipelines on tiny checkpoints (they land on neuron by themselves), and a ``Seq2SeqTrainer``
fine-tune of a tiny Whisper on a local dataset of sound arrays, alone and under ``accelerate launch --device neuron
--num_processes 2``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from _helpers_distributed import WORLD, run_launcher, succeeded
from _helpers_patches import SCRIPTS

from hf_neuron.tiny.audio.checkpoint import materialize
from hf_neuron.tiny.audio.sounds import synthetic_sound

pytestmark = pytest.mark.usefixtures("neuron")

#: A Seq2SeqTrainer fine-tune of the tiny Whisper in ``argv[1]`` on eight synthetic sounds with their transcripts
#: (``datasets`` rows holding the arrays), writing its losses to ``argv[2]/result.json``; ``argv[3] == "cpu"`` trains
#: on the CPU.
FINE_TUNE = """
import json, sys
from datasets import Dataset
from transformers import (AutoFeatureExtractor, AutoModelForSpeechSeq2Seq, AutoTokenizer, Seq2SeqTrainer,
                          Seq2SeqTrainingArguments)
from hf_neuron.tiny.audio.rows import row_texts
from hf_neuron.tiny.audio.sounds import synthetic_sounds

model_dir, out, device = sys.argv[1], sys.argv[2], sys.argv[3]
extractor, tokenizer = AutoFeatureExtractor.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
rate = extractor.sampling_rate
speech = Dataset.from_dict({"audio": [s.tolist() for s in synthetic_sounds([1.0] * 8, rate)],
                            "text": row_texts(8, seed=0)})

def prepare(row):
    features = extractor(row["audio"], sampling_rate=rate).input_features[0]
    return {"input_features": features, "labels": tokenizer(row["text"], add_special_tokens=False).input_ids[:8]}

speech = speech.map(prepare, remove_columns=["audio", "text"])
args = Seq2SeqTrainingArguments(out, max_steps=4, per_device_train_batch_size=2, learning_rate=1e-2, logging_steps=1,
                                report_to=[], save_strategy="no", seed=0, optim="adamw_torch",
                                use_cpu=device == "cpu")
trainer = Seq2SeqTrainer(model=AutoModelForSpeechSeq2Seq.from_pretrained(model_dir), args=args, train_dataset=speech)
trainer.train()
if trainer.is_world_process_zero():
    json.dump({"world": args.world_size, "device": str(next(trainer.model.parameters()).device),
               "wrapped": type(trainer.model_wrapped).__name__,
               "losses": [e["loss"] for e in trainer.state.log_history if "loss" in e]},
              open(f"{out}/result.json", "w"))
"""


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("audio")
    for model_type in ("whisper", "speech_to_text", "fastspeech2_conformer_with_hifigan"):
        materialize(model_type, directory / model_type)
    return directory


def _pipelines(task: str, path: Path, **options: Any) -> tuple[Any, Any]:
    from transformers import pipeline

    make: Any = pipeline  # the task is a parameter here, not one of pipeline's literal overloads
    return make(task, model=str(path), **options), make(task, model=str(path), device="cpu", **options)


def test_speech_recognition_pipeline_transcribes_on_neuron_like_the_cpu(checkpoints: Path) -> None:
    pipe, cpu = _pipelines("automatic-speech-recognition", checkpoints / "speech_to_text")
    assert pipe.device == torch.device("neuron:0")
    assert {p.device for p in pipe.model.parameters()} == {torch.device("neuron:0")}
    sound = synthetic_sound(1.0, pipe.feature_extractor.sampling_rate)
    features = pipe.feature_extractor(sound, sampling_rate=pipe.feature_extractor.sampling_rate,
                                      return_tensors="pt")
    start = torch.tensor([[pipe.model.config.decoder_start_token_id]])
    with torch.no_grad():
        logits = pipe.model(**{k: v.to("neuron") for k, v in features.items()},
                            decoder_input_ids=start.to("neuron")).logits.cpu()
        expected = cpu.model(**features, decoder_input_ids=start).logits
    assert (logits - expected).abs().max().item() < 1e-5
    heard = pipe(sound, generate_kwargs={"max_new_tokens": 8})["text"]
    assert heard and heard == cpu(sound, generate_kwargs={"max_new_tokens": 8})["text"]


def test_whisper_pipeline_with_a_whisper_tokenizer_transcribes_on_neuron_like_the_cpu(checkpoints: Path) -> None:
    from transformers import AutoTokenizer, WhisperTokenizer

    tiny = AutoTokenizer.from_pretrained(checkpoints / "whisper")  # the project's tokenizer, as Whisper's class
    tokenizer = WhisperTokenizer(tokenizer_object=tiny.backend_tokenizer, eos_token=tiny.eos_token,
                                 pad_token=tiny.pad_token, bos_token=tiny.bos_token, unk_token=tiny.unk_token)
    pipe, cpu = _pipelines("automatic-speech-recognition", checkpoints / "whisper", tokenizer=tokenizer)
    assert pipe.device == torch.device("neuron:0")
    sound = synthetic_sound(1.0, pipe.feature_extractor.sampling_rate)
    heard = pipe(sound, generate_kwargs={"max_new_tokens": 8})["text"]
    assert heard == cpu(sound, generate_kwargs={"max_new_tokens": 8})["text"]


def test_text_to_speech_pipeline_speaks_on_neuron_like_the_cpu(checkpoints: Path) -> None:
    pipe, cpu = _pipelines("text-to-speech", checkpoints / "fastspeech2_conformer_with_hifigan")
    assert pipe.device == torch.device("neuron:0")
    assert {p.device for p in pipe.model.parameters()} == {torch.device("neuron:0")}
    spoken, expected = pipe("Hello, world!")["audio"], cpu("Hello, world!")["audio"]
    assert spoken.shape == expected.shape and spoken.size > 0
    assert abs(spoken - expected).max() < 1e-4
    other = cpu("The quick brown fox jumps over the lazy dog.")["audio"]
    assert other.shape != expected.shape or abs(other - expected).max() > 1e-4  # the comparison can fail


def _fine_tune(directory: Path, model: Path, out: str, device: str) -> dict[str, Any]:
    (directory / "fine_tune.py").write_text(FINE_TUNE)
    command = [sys.executable, "fine_tune.py", str(model), out, device]
    result = subprocess.run(command, cwd=directory, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    return dict(json.loads((directory / out / "result.json").read_text()))


def test_seq2seq_trainer_fine_tunes_whisper_on_neuron_like_the_cpu(checkpoints: Path, tmp_path: Path) -> None:
    neuron = _fine_tune(tmp_path, checkpoints / "whisper", "neuron", "neuron")
    cpu = _fine_tune(tmp_path, checkpoints / "whisper", "cpu", "cpu")
    assert (neuron["device"], cpu["device"], neuron["world"]) == ("neuron:0", "cpu", 1)
    assert len(neuron["losses"]) == 4 and neuron["losses"][-1] < neuron["losses"][0]
    assert max(abs(a - b) for a, b in zip(neuron["losses"], cpu["losses"], strict=True)) < 1e-4, (neuron, cpu)


@pytest.mark.distributed
def test_seq2seq_trainer_fine_tunes_whisper_under_accelerate_launch_on_two_devices(checkpoints: Path,
                                                                                    tmp_path: Path) -> None:
    (tmp_path / "fine_tune.py").write_text(FINE_TUNE)
    launch = [str(SCRIPTS / "accelerate"), "launch", "--device", "neuron", "--num_processes", str(WORLD),
              "--main_process_port", "0", "fine_tune.py", str(checkpoints / "whisper"), "ddp", "neuron"]
    succeeded(run_launcher(tmp_path, launch, timeout=300))
    result = json.loads((tmp_path / "ddp" / "result.json").read_text())
    assert (result["world"], result["device"], result["wrapped"]) == (WORLD, "neuron:0", "DistributedDataParallel")
    assert len(result["losses"]) == 4 and result["losses"][-1] < result["losses"][0]
