"""Real PyTorch exports (sample_models/torch, made by scripts/export_torch_models.py).

Each model is optimized and must end with no sequence op, pass ONNX's full checker, and give
PyTorch's own outputs (stored beside it) under ONNX Runtime and onnx.reference, for every
stored run, including runs with other trip counts than the export's sample. Torch is not
needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

import seqpasses
from helpers import SAMPLES, op_counts, run_cli, sequence_op_count, stored_runs
from seqpasses.verification import REFERENCE_OVERRIDES

TORCH = SAMPLES / "torch"
MODELS = sorted(TORCH.glob("*.onnx"))

# What each TorchScript export needs done beyond straight-line folding.
EXPECTED_REWRITES = {
    "ts_append_dynamic_cat": "loop-append-to-scan-output",
    "ts_append_data_dependent": "loop-append-to-scan-output",
    "ts_rnn_cell": "loop-append-to-scan-output",
    "ts_loop_reads_list": "loop-unroll",
    "ts_unbind_loop_stack": "loop-unroll",
    "ts_if_branch_lists": "if-static-sequences",
    "ts_chunk_cat": "split-to-sequence",
    "ts_list_edits": "concat-from-sequence-new-axis",
    "ts_nested_loops": "loop-append-to-scan-output",
    "ts_while_loop": "loop-append-to-scan-output",
    "ts_two_lists": "loop-append-to-scan-output",
    "ts_stack_columns": "loop-append-to-scan-output",
    "ts_insert_front": "loop-append-to-scan-output",
    "ts_zip_unbind": "loop-unroll",
    "ts_unbind_dynamic_loop": "sequence-at-split",
    "ts_unbind_run_time_index": "sequence-at-split",
    "ts11_append_dynamic_cat": "concat-of-split",
    "ts11_stack_columns": "concat-of-split",
    "ts11_unbind_dynamic_loop": "sequence-at-split",
    "ts_decode_loop": "loop-lift-reads",
    "ts_branch_on_length": "loop-append-to-scan-output",
    "ts_sum_unbind": "sequence-at-split",
    "ts_pop_in_branches": "if-static-sequences",
    "ts_pop_then_append_in_if": "if-static-sequences",
    "ts_nested_append_const": "loop-append-to-scan-output",
    "ts_tensor_split": "split-to-sequence",
    "ts_computed_index": "split-to-sequence",
    # run-time positions and lengths: the list held as one [n, *E] tensor
    "ts_list_index_input": "stacked-at",
    "ts_list_insert_at": "stacked-insert",
    "ts_list_del_at": "stacked-erase",
    "ts_queue_pop": "loop-carries-elements",
    "ts_conditional_append": "loop-carries-stacked",
    "ts_if_list_lengths": "if-stacked-lists",
    "ts_history_reads": "loop-carries-stacked",
    "ts_drop_weakest": "loop-carries-stacked",
    "ts_row_differences": "loop-carries-stacked",
    "ts_unbind_comprehension": "loop-append-to-scan-output",
    # as real models write them (issue 49): repeat_interleave splits by
    # ConstantOfShape(Shape(r), 1), all ones; an embedding bag's row comes out of an If
    "ts_repeat_interleave": "sequence-at-split",
    "ts_conv_frames": "loop-append-to-scan-output",
    "dynamo_embedding_bag": "loop-append-to-scan-output",
    # a CIF predictor's frames (a row tiled by ConstantOfShape ones); a vocoder's outputs,
    # appended from GRU states carried in a list (carried as elements, then a scan output)
    "ts_cif_predictor": "loop-append-to-scan-output",
    "ts_vocoder_sampling": "loop-append-to-scan-output",
    # a detector's boxes and counts (two lists, one run); a greedy decoder bounded by its
    # token list's length (unrolled); anchors per image, rows of H*W+U*V (a scan output)
    "ts_detection_postprocess": "loop-running-concat",
    "ts_greedy_decode": "loop-unroll",
    "ts_anchors_per_image": "loop-append-to-scan-output",
}


def _assert_matches(got: list[object], expected: list[np.ndarray], what: str) -> None:
    assert len(got) == len(expected), what
    for index, (value, want) in enumerate(zip(got, expected, strict=True)):
        array = np.asarray(value)
        assert array.shape == want.shape, f"{what}: output {index} shape {array.shape}"
        np.testing.assert_allclose(array, want, rtol=1e-5, atol=1e-6, err_msg=what)


def test_there_are_exports_of_both_kinds() -> None:
    names = [p.stem for p in MODELS]
    assert sum(n.startswith("ts_") for n in names) >= 10
    assert sum(n.startswith("dynamo_") for n in names) >= 5


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_export_ends_without_sequence_ops_and_matches_pytorch(path: Path) -> None:
    model = onnx.load(path)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)

    assert sequence_op_count(optimized) == 0, [(r.op_type, r.detail) for r in report.left]
    onnx.checker.check_model(optimized, full_check=True)
    wanted = EXPECTED_REWRITES.get(path.stem)
    if wanted is not None:
        assert wanted in {r.rule for r in report.rewrites}
    if wanted == "loop-unroll":
        assert "Loop" not in op_counts(optimized)

    runs = stored_runs(path)
    assert runs
    before = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    after = ort.InferenceSession(optimized.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = ReferenceEvaluator(optimized, new_ops=list(REFERENCE_OVERRIDES))
    for k, (feeds, expected) in enumerate(runs):
        _assert_matches(before.run(None, feeds), expected, f"original, run {k}")
        _assert_matches(after.run(None, feeds), expected, f"onnxruntime, run {k}")
        _assert_matches(reference.run(None, feeds), expected, f"onnx.reference, run {k}")


def test_rnn_export_through_the_cli_with_check(tmp_path: Path) -> None:
    out = tmp_path / "rnn.onnx"
    result = run_cli("optimize", TORCH / "ts_rnn_cell.onnx", "-o", out, "--check")
    assert result.returncode == 0, result.stderr
    assert "sequence ops: 3 -> 0" in result.stdout
    assert sequence_op_count(onnx.load(out)) == 0


@pytest.mark.parametrize(
    ("name", "index", "dims"),
    [
        ("ts_nested_loops", 0, ["n", "m"]),
        ("ts_unbind_dynamic_loop", 0, ["n", 4]),
        ("ts_stack_columns", 0, [2, "m"]),
        ("ts11_stack_columns", 0, [2, "m"]),
        ("ts_rnn_cell", 1, [2, 4]),  # the final hidden state, a value the loop carries
    ],
)
def test_exporter_placeholder_dims_of_outputs_become_the_proven_ones(
    name: str, index: int, dims: list[object]
) -> None:
    # TorchScript declares its list outputs with made-up dims (ConcatFromSequence24_dim_0);
    # what the rewrite proves (an input's dim, a number) takes their place
    model = onnx.load(TORCH / f"{name}.onnx")
    declared = [d.dim_param for d in model.graph.output[index].type.tensor_type.shape.dim]
    assert all(re.search(r"_dim_\d$", p) for p in declared), declared
    optimized = seqpasses.optimize(model)
    shape = optimized.graph.output[index].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in shape] == dims
