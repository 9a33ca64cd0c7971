"""`transformers.pipeline` places the model on neuron when neuron is torch's accelerator, with CPU-equal results."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron")

PROMPT = "The capital of France is"




def _pipeline(path: Path, **options: object):  # type: ignore[no-untyped-def]
    from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline

    return pipeline("text-generation", model=AutoModelForCausalLM.from_pretrained(path),
                    tokenizer=AutoTokenizer.from_pretrained(path), **options)


def test_pipeline_without_a_device_runs_on_neuron_like_the_cpu(tiny_llama: Path) -> None:
    pipe, cpu = _pipeline(tiny_llama), _pipeline(tiny_llama, device="cpu")
    assert pipe.device == torch.device("neuron:0")
    assert next(pipe.model.parameters()).device == torch.device("neuron:0")
    assert next(cpu.model.parameters()).device == torch.device("cpu")
    ids = pipe.tokenizer(PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        difference = (pipe.model(ids.to("neuron")).logits.cpu() - cpu.model(ids).logits).abs().max().item()
    assert difference < 1e-5
    generated = pipe(PROMPT, max_new_tokens=8, do_sample=False)[0]["generated_text"]
    assert generated == cpu(PROMPT, max_new_tokens=8, do_sample=False)[0]["generated_text"]


def test_pipeline_device_index_means_a_neuron_device(tiny_llama: Path) -> None:
    assert _pipeline(tiny_llama, device=1).device == torch.device("neuron:1")
    assert _pipeline(tiny_llama, device=-1).device == torch.device("cpu")


def test_pipeline_from_a_path_and_from_a_model_already_on_neuron(tiny_llama: Path) -> None:
    from transformers import AutoModelForCausalLM, pipeline

    assert pipeline("text-generation", model=str(tiny_llama)).device == torch.device("neuron:0")
    model = AutoModelForCausalLM.from_pretrained(tiny_llama, device_map="neuron:1")
    pipe = pipeline("text-generation", model=model, tokenizer=str(tiny_llama))
    assert next(pipe.model.parameters()).device == torch.device("neuron:1")  # already on neuron: stays there


def test_image_text_pipeline_without_a_device_runs_on_neuron_like_the_cpu(tiny_llava: Path) -> None:
    from transformers import pipeline

    from hf_neuron.tiny.image_text.images import synthetic_image

    pipe = pipeline("image-text-to-text", model=str(tiny_llava))
    cpu = pipeline("image-text-to-text", model=str(tiny_llava), device="cpu")
    assert pipe.device == torch.device("neuron:0")
    assert {p.device for p in pipe.model.parameters()} == {torch.device("neuron:0")}
    messages = [{"role": "user", "content": [{"type": "image", "image": synthetic_image(32, 48)},
                                             {"type": "text", "text": "What is in the picture?"}]}]
    inputs = pipe.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                return_dict=True, return_tensors="pt")
    assert int((inputs["input_ids"] == pipe.model.config.image_token_index).sum()) == 64
    with torch.no_grad():
        logits = pipe.model(**{k: v.to("neuron") for k, v in inputs.items()}).logits.cpu()
        expected = cpu.model(**inputs).logits
    assert (logits - expected).abs().max().item() < 1e-5
    generated = pipe(text=messages, max_new_tokens=8, do_sample=False)[0]["generated_text"]
    assert generated == cpu(text=messages, max_new_tokens=8, do_sample=False)[0]["generated_text"]
