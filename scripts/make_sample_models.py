"""Write the models in sample_models/ (run from the repository root).

The six operator-page examples of ConcatFromSequence and SequenceErase, with the erase
positions as constants (the operator pages fix them), and a few richer models in the shapes
that exporters produce. Usage: python scripts/make_sample_models.py [OUTDIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx

HEADER = '<ir_version: 8, opset_import: ["" : 18]>'
THREE = "float[2,3] input_seq, float[2,3] input_1, float[2,3] input_2"

MODELS: dict[str, str] = {
    # -- the operator-page examples -------------------------------------------------------
    "concat_from_sequence_axis0": f"""{HEADER}
concat_from_sequence_axis0 ({THREE}) => (float[6,3] output) {{
  seq = SequenceConstruct(input_seq, input_1, input_2)
  output = ConcatFromSequence<axis = 0>(seq)
}}""",
    "concat_from_sequence_axis1": f"""{HEADER}
concat_from_sequence_axis1 ({THREE}) => (float[2,9] output) {{
  seq = SequenceConstruct(input_seq, input_1, input_2)
  output = ConcatFromSequence<axis = 1>(seq)
}}""",
    "concat_from_sequence_new_axis": f"""{HEADER}
concat_from_sequence_new_axis ({THREE}) => (float[3,2,3] output) {{
  seq = SequenceConstruct(input_seq, input_1, input_2)
  output = ConcatFromSequence<axis = 0, new_axis = 1>(seq)
}}""",
    "sequence_erase_default": f"""{HEADER}
sequence_erase_default ({THREE}) => (seq(float[2,3]) output_sequence) {{
  seq = SequenceConstruct(input_seq, input_1, input_2)
  output_sequence = SequenceErase(seq)
}}""",
    "sequence_erase_neg2": f"""{HEADER}
sequence_erase_neg2 ({THREE}) => (seq(float[2,3]) output_sequence) {{
  seq = SequenceConstruct(input_seq, input_1, input_2)
  position = Constant<value = int64 {{-2}}>()
  output_sequence = SequenceErase(seq, position)
}}""",
    "sequence_erase_pos1": f"""{HEADER}
sequence_erase_pos1 ({THREE}) => (seq(float[2,3]) output_sequence) {{
  seq = SequenceConstruct(input_seq, input_1, input_2)
  position = Constant<value = int64 {{1}}>()
  output_sequence = SequenceErase(seq, position)
}}""",
    # -- richer models ----------------------------------------------------------------------
    # torch.unbind(x) -> [relu(t) for t] -> torch.stack, as the TorchScript exporter writes it
    "unbind_stack": """<ir_version: 8, opset_import: ["" : 17]>
unbind_stack (float[4,3] x) => (float[4,3] stacked, float[3] third, int64 count) {
  parts = SplitToSequence<axis = 0, keepdims = 0>(x)
  count = SequenceLength(parts)
  two = Constant<value = int64 {2}>()
  t2 = SequenceAt(parts, two)
  third = Relu(t2)
  stacked = ConcatFromSequence<axis = 0, new_axis = 1>(parts)
}""",
    # torch.split(x, [2, 4], dim=1), a list edited in place, then torch.cat(dim=1)
    "split_edit_cat": """<ir_version: 7, opset_import: ["" : 13]>
split_edit_cat (float[B,6] x) => (float[B,10] y) {
  sizes = Constant<value = int64[2] {2, 4}>()
  parts = SplitToSequence<axis = 1>(x, sizes)
  zero = Constant<value = int64 {0}>()
  head = SequenceAt(parts, zero)
  scaled = Add(head, head)
  first = Constant<value = int32 {0}>()
  edited = SequenceInsert(parts, scaled, first)
  doubled = SequenceInsert(edited, scaled)
  y = ConcatFromSequence<axis = -1>(doubled)
}""",
    # a list built with append / pop / insert / len, opset 11 (attribute forms)
    "list_ops_opset11": """<ir_version: 6, opset_import: ["" : 11]>
list_ops_opset11 (float[2,2] a, float[2,2] b, float[2,2] c, float[2,2] d) => (float[3,2,2] stacked, int64 n) {
  empty = SequenceEmpty<dtype = 1>()
  s1 = SequenceInsert(empty, a)
  s2 = SequenceInsert(s1, b)
  s3 = SequenceInsert(s2, c)
  s4 = SequenceErase(s3)
  front = Constant<value = int64 {0}>()
  s5 = SequenceInsert(s4, d, front)
  n = SequenceLength(s5)
  stacked = ConcatFromSequence<axis = 0, new_axis = 1>(s5)
}""",
    # a static list read inside both branches of an If
    "if_reads_list": """<ir_version: 8, opset_import: ["" : 18]>
if_reads_list (bool flag, float[2] a, float[2] b) => (float[2] y) {
  s = SequenceConstruct(a, b)
  zero = Constant<value = int64 {0}>()
  last = Constant<value = int64 {-1}>()
  y = If(flag) <then_branch = then_g () => (float[2] t) {
    t = SequenceAt(s, zero)
  }, else_branch = else_g () => (float[2] e) {
    x = SequenceAt(s, last)
    e = Neg(x)
  }>
}""",
    # what seqpasses must leave: an erase at a run-time position, and a loop with a run-time
    # trip count whose body reads its list at the loop counter
    "run_time_reads": """<ir_version: 8, opset_import: ["" : 18]>
run_time_reads (float[4,3] x, int64 i, int64 steps) => (float[3] row, float[?,3] grown, int64 n) {
  rows = SplitToSequence<axis = 0, keepdims = 0>(x)
  row = SequenceAt(rows, i)
  rest = SequenceErase(rows, i)
  n = SequenceLength(rest)
  t = Constant<value = bool {1}>()
  final = Loop(steps, t, rows) <body = body (int64 k, bool c, seq(float) s) => (bool co, seq(float) so) {
    co = Identity(c)
    prev = SequenceAt(s, k)
    next = Neg(prev)
    so = SequenceInsert(s, next)
  }>
  grown = ConcatFromSequence<axis = 0, new_axis = 1>(final)
}""",
    # what must stay: elements of two shapes cannot be one tensor, and a loop whose list's
    # elements grow every iteration has neither a scan output nor a tensor to carry
    "unlike_shapes": """<ir_version: 8, opset_import: ["" : 18]>
unlike_shapes (float[2,3] a, float[4,3] b, int64 i, int64 steps) => (float[?,3] picked, float[?,3] grown) {
  s = SequenceConstruct(a, b)
  picked = SequenceAt(s, i)
  t = Constant<value = bool {1}>()
  final = Loop(steps, t, s) <body = body (int64 k, bool c, seq(float[?,3]) l) => (bool co, seq(float[?,3]) lo) {
    co = Identity(c)
    prev = SequenceAt(l, k)
    twice = Concat<axis = 0>(prev, prev)
    lo = SequenceInsert(l, twice)
  }>
  grown = ConcatFromSequence<axis = 0>(final)
}""",
    # a model-local function of a custom domain beside a list that folds: the list goes, the
    # function (no sequence op in it) stays unless --inline-functions (OpenVINO rejects it)
    # a reflect Pad needs a signal longer than its padding (as silero-vad's STFT does):
    # --check must draw inputs long enough for the original to run
    "reflect_pad_frames": """<ir_version: 8, opset_import: ["" : 18]>
reflect_pad_frames (float[1,N] signal) => (float[1,?] frames) {
  pads = Constant<value = int64[4] {0, 32, 0, 32}>()
  padded = Pad<mode = "reflect">(signal, pads)
  both = SequenceConstruct(signal, padded)
  frames = ConcatFromSequence<axis = 1>(both)
}""",
    "local_function": """<ir_version: 8, opset_import: ["" : 18, "pkg.custom" : 1]>
local_function (float[4,3] x) => (float[4,3] y) {
  minus = Constant<value = int64 {-1}>()
  three = Constant<value = int64[1] {3}>()
  four = Constant<value = int64[1] {4}>()
  parts = SplitToSequence<axis = 0, keepdims = 1>(x)
  kept = SequenceErase(parts, minus)
  scaled = pkg.custom.Scale(x)
  head = ConcatFromSequence<axis = 0>(kept)
  last = Slice(scaled, three, four)
  y = Concat<axis = 0>(head, last)
}
<domain: "pkg.custom", opset_import: ["" : 18]>
Scale (a) => (b) {
  two = Constant<value = float {2.0}>()
  b = Mul(a, two)
}""",
}


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("sample_models")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in MODELS.items():
        model = onnx.parser.parse_model(text)
        onnx.checker.check_model(model, full_check=True)
        (out / f"{name}.onnx").write_bytes(model.SerializeToString(deterministic=True))
        print(f"wrote {out / name}.onnx")


if __name__ == "__main__":
    main()
