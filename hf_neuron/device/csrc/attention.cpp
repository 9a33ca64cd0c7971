// scaled_dot_product_attention on the device: which kernel it picks (the per-device `_fused_sdp_choice_stub`) and,
// with the real backend's routes, the kernel TorchNeuron picks for 4-D inputs, the "overrideable" fused attention
// (`_scaled_dot_product_fused_attention_overrideable` and its backward), computed with CPU kernels on aliases of
// device memory: the CPU's flash kernel where it applies, else the attention written out (with dropout drawn from
// the device's generator, and drawn again for the backward from the seed the forward returns).
#include "neuron.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_fused_sdp_choice_cpu_dispatch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <mutex>
#include <tuple>

namespace hf_neuron {
namespace {

// sdp::SDPBackend
constexpr int64_t kMath = 0;
constexpr int64_t kFlash = 1;
constexpr int64_t kOverrideable = 4;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

using Forward = std::tuple<
    at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor, at::Tensor>;
using Backward = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// The type attention computes in: float for 16-bit types (as the CPU's math kernel upcasts them) and for 64-bit
// ones when the device computes those in 32 bits; else the input's.
c10::ScalarType compute_type(c10::ScalarType type) {
  if (type == c10::kHalf || type == c10::kBFloat16 || (type == c10::kDouble && settings().narrow_64bit)) {
    return c10::kFloat;
  }
  return type;
}

// CPU views of one call's inputs, the bias additive. The CPU's flash kernel takes grouped-query keys and values as
// they are; the written-out attention repeats them for each query head (`repeated`).
struct Inputs {
  at::Tensor query;
  at::Tensor key;
  at::Tensor value;
  at::Tensor bias;
  int64_t groups = 1;  // query heads per key/value head
  double scale = 1.0;

  at::Tensor repeated(const at::Tensor& key_or_value) const {
    return groups == 1 ? key_or_value : key_or_value.repeat_interleave(groups, 1);
  }
};

Inputs cpu_inputs(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& bias,
    std::optional<double> scale) {
  TORCH_CHECK(
      query.dim() == 4 && key.dim() == 4 && value.dim() == 4,
      "The neuron device's fused attention takes 4-D query, key and value (batch, heads, sequence, embedding)");
  Inputs in;
  in.query = cpu_alias_of(query);
  in.key = cpu_alias_of(key);
  in.value = cpu_alias_of(value);
  const int64_t heads = in.query.size(1);
  const int64_t kv_heads = in.key.size(1);
  if (kv_heads != heads) {
    TORCH_CHECK(
        kv_heads > 0 && heads % kv_heads == 0 && in.value.size(1) == kv_heads,
        "The neuron device's fused attention needs the query heads (", heads,
        ") to be a multiple of the key and value heads (", kv_heads, ")");
    in.groups = heads / kv_heads;
  }
  if (bias.defined()) {
    in.bias = cpu_alias_of(bias);
    if (in.bias.scalar_type() == c10::kBool) {
      const auto options = in.query.options();
      in.bias = at::where(in.bias, at::scalar_tensor(0.0, options), at::scalar_tensor(kNegInf, options));
    }
  }
  in.scale = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(in.query.size(-1)));
  return in;
}

std::optional<at::Tensor> optional_bias(const Inputs& in) {
  return in.bias.defined() ? std::optional<at::Tensor>(in.bias) : std::nullopt;
}

// Whether the CPU's flash kernel computes this call (the CPU's own choice for it).
bool flash_applies(const Inputs& in, double dropout_p, bool is_causal, std::optional<double> scale) {
  return at::cpu::_fused_sdp_choice(
             in.query, in.key, in.value, optional_bias(in), dropout_p, is_causal, scale, in.groups > 1) == kFlash;
}

// scale * Q K^T (`key` repeated for each query head), causal (top-left) and bias masks applied, in `type`.
at::Tensor scores_of(const Inputs& in, const at::Tensor& key, bool is_causal, c10::ScalarType type) {
  at::Tensor scores = at::matmul(in.query.to(type), key.to(type).transpose(-2, -1)).mul_(in.scale);
  if (is_causal) {
    const auto future =
        at::ones({scores.size(-2), scores.size(-1)}, scores.options().dtype(c10::kBool)).triu_(1);
    scores.masked_fill_(future, kNegInf);
  }
  if (in.bias.defined()) {
    scores.add_(in.bias.to(type));
  }
  return scores;
}

// softmax(scores) and its log-normaliser; a row masked everywhere attends to nothing (zeros), as the math kernel's.
// The probabilities are the softmax's (the row's maximum subtracted, then divided by the sum), not exp(scores - lse):
// in a row masked with the dtype's lowest value (transformers' masks), lse rounds to that value, so exp(scores - lse)
// would give every position 1 instead of 1 / length (pix2struct's padded rows: gradients thousands of times the CPU's).
std::pair<at::Tensor, at::Tensor> probabilities(const at::Tensor& scores) {
  at::Tensor lse = at::logsumexp(scores, -1, /*keepdim=*/true);
  at::Tensor probs = at::softmax(scores, -1);
  probs.masked_fill_(lse.isneginf(), 0.0);
  return {probs, lse.squeeze(-1)};
}

// The kept positions (scaled by 1 / (1 - p)) of dropout drawn from `seed`: the forward and the backward draw the same.
at::Tensor dropout_scale(const at::Tensor& like, double dropout_p, int64_t seed) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  at::Tensor keep = at::empty(like.sizes(), like.options()).bernoulli_(1.0 - dropout_p, generator);
  return keep.div_(1.0 - dropout_p);
}

// In a compiled graph, `out` laid out as the operator's meta function lays out its result (`alloc_with_matching_layout`
// in torch/_meta_registrations.py): in the dimension order of the query's strides. The graph was traced with that
// layout and its views rely on it (kimi_linear views the transposed output of a transposed query, whose value head
// size differs, so the attention is written out and its matmul's result is laid out otherwise). Eagerly the result is
// the kernel's.
at::Tensor in_query_order(at::Tensor out, const at::Tensor& query) {
  if (!running_compiled_graph() || query.dim() != 4) {
    return out;
  }
  std::array<int64_t, 4> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return query.stride(a) > query.stride(b); });
  std::array<int64_t, 4> strides{};
  int64_t stride = 1;
  for (auto dim = order.rbegin(); dim != order.rend(); ++dim) {
    strides[*dim] = stride;
    stride *= out.size(*dim);
  }
  if (out.strides() == c10::IntArrayRef(strides)) {
    return out;
  }
  return at::empty_strided(out.sizes(), strides, out.options()).copy_(out);
}

// A seed for this call's dropout, drawn from the generator random operators on the device draw from.
int64_t draw_seed(c10::DeviceIndex index) {
  at::Generator generator = generator_for(index);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return static_cast<int64_t>(generator.get<at::CPUGeneratorImpl>()->random() & 0x7fffffff);
}

Forward fused_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const std::optional<at::Tensor>& bias,
    double dropout_p, bool is_causal, bool /*return_debug_mask*/, std::optional<double> scale) {
  DeviceKernelScope scope("aten::_scaled_dot_product_fused_attention_overrideable");
  const c10::DeviceIndex index = query.device().index();
  const Inputs in = cpu_inputs(query, key, value, bias.has_value() ? *bias : at::Tensor(), scale);
  at::Tensor seed = at::detail::scalar_tensor_static(0, c10::kLong, c10::Device(c10::kCPU));
  at::Tensor out;
  at::Tensor lse;
  if (dropout_p == 0.0 && flash_applies(in, dropout_p, is_causal, scale)) {
    std::tie(out, lse) = at::_scaled_dot_product_flash_attention_for_cpu(
        in.query, in.key, in.value, 0.0, is_causal, optional_bias(in), scale);
  } else {
    const auto type = compute_type(query.scalar_type());
    auto [probs, normaliser] = probabilities(scores_of(in, in.repeated(in.key), is_causal, type));
    if (dropout_p > 0.0) {
      seed.fill_(draw_seed(index));
      probs.mul_(dropout_scale(probs, dropout_p, seed.item<int64_t>()));
    }
    out = at::matmul(probs, in.repeated(in.value).to(type)).to(query.scalar_type());
    lse = normaliser.to(c10::kFloat);
  }
  const c10::SymInt max_q = in.query.size(-2);
  const c10::SymInt max_k = in.key.size(-2);
  return {adopt_cpu_tensor(in_query_order(std::move(out), in.query), index), adopt_cpu_tensor(std::move(lse), index),
          at::Tensor(), at::Tensor(), max_q, max_k, adopt_cpu_tensor(std::move(seed), index),
          adopt_cpu_tensor(at::detail::scalar_tensor_static(0, c10::kLong, c10::Device(c10::kCPU)), index),
          adopt_cpu_tensor(at::detail::empty_cpu({0}, query.scalar_type()), index)};
}

// Sums the gradient of a repeated key or value over the query heads that shared it.
at::Tensor ungrouped(const at::Tensor& gradient, int64_t groups) {
  return groups == 1 ? gradient : gradient.unflatten(1, {-1, groups}).sum(2);
}

Backward fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out, const at::Tensor& logsumexp,
    const at::Tensor& /*cum_seq_q*/, const at::Tensor& /*cum_seq_k*/, c10::SymInt /*max_q*/, c10::SymInt /*max_k*/,
    double dropout_p, bool is_causal, const at::Tensor& philox_seed, const at::Tensor& /*philox_offset*/,
    std::optional<double> scale) {
  DeviceKernelScope scope("aten::_scaled_dot_product_fused_attention_overrideable_backward");
  if (!grad_out.defined()) {
    // No gradient reached the attention's output (DDP's output sink passes none for an output the loss does not
    // use): none flows to its inputs either, as the CPU's attention backward returns.
    return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
  const c10::DeviceIndex index = query.device().index();
  const Inputs in = cpu_inputs(query, key, value, bias, scale);
  const at::Tensor grad = cpu_alias_of(grad_out);
  const bool bias_gradient = grad_input_mask[3] && bias.defined();
  at::Tensor dq;
  at::Tensor dk;
  at::Tensor dv;
  at::Tensor dbias;
  if (dropout_p == 0.0 && !bias_gradient && flash_applies(in, dropout_p, is_causal, scale)) {
    std::tie(dq, dk, dv) = at::_scaled_dot_product_flash_attention_for_cpu_backward(
        grad, in.query, in.key, in.value, cpu_alias_of(out), cpu_alias_of(logsumexp), 0.0, is_causal,
        optional_bias(in), scale);
  } else {
    const auto type = compute_type(query.scalar_type());
    const at::Tensor repeated_key = in.repeated(in.key);
    const auto [probs, normaliser] = probabilities(scores_of(in, repeated_key, is_causal, type));
    at::Tensor kept;
    at::Tensor dropped = probs;
    if (dropout_p > 0.0) {
      kept = dropout_scale(probs, dropout_p, cpu_alias_of(philox_seed).item<int64_t>());
      dropped = probs * kept;
    }
    const at::Tensor g = grad.to(type);
    dv = at::matmul(dropped.transpose(-2, -1), g);
    at::Tensor dp = at::matmul(g, in.repeated(in.value).to(type).transpose(-2, -1));
    if (kept.defined()) {
      dp.mul_(kept);
    }
    const at::Tensor ds = probs * (dp - (dp * probs).sum(-1, /*keepdim=*/true));
    dq = at::matmul(ds, repeated_key.to(type)).mul_(in.scale);
    dk = at::matmul(ds.transpose(-2, -1), in.query.to(type)).mul_(in.scale);
    if (bias_gradient) {
      dbias = at::sum_to(ds, bias.sizes()).to(bias.scalar_type());
    }
    dk = ungrouped(dk, in.groups);
    dv = ungrouped(dv, in.groups);
  }
  return {adopt_cpu_tensor(dq.to(query.scalar_type()), index), adopt_cpu_tensor(dk.to(key.scalar_type()), index),
          adopt_cpu_tensor(dv.to(value.scalar_type()), index),
          dbias.defined() ? adopt_cpu_tensor(std::move(dbias), index) : at::Tensor()};
}

} // namespace

// scaled_dot_product_attention asks a per-device stub which kernel to use; without one it takes the math
// decomposition. With the real backend's routes, the choice TorchNeuron makes (csrc/aten/SdpBackendSelection.cpp
// of its source): the overrideable fused kernel for 4-D query, key and value on the device, else the math
// decomposition. Otherwise the CPU's choice, so that attention runs the CPU's fused kernels.
int64_t fused_sdp_choice(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const std::optional<at::Tensor>& mask,
    double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa) {
  if (settings().trainium_dispatch) {
    const bool four_d = query.dim() == 4 && key.dim() == 4 && value.dim() == 4;
    return query.device().type() == kNeuron && four_d ? kOverrideable : kMath;
  }
  return at::cpu::_fused_sdp_choice(query, key, value, mask, dropout_p, is_causal, scale, enable_gqa);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  own(m, "_scaled_dot_product_fused_attention_overrideable", fused_attention);
  own(m, "_scaled_dot_product_fused_attention_overrideable_backward", fused_attention_backward);
}

} // namespace hf_neuron

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &hf_neuron::fused_sdp_choice)
} // namespace at::native
