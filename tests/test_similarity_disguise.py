"""Disguised copies for the similarity tests and benchmarks/similarity_speed.py, and proof that
the disguise really disguises (otherwise "the copy is flagged" would prove nothing).

    disguise(source, seed) -> the same module with every local variable renamed, the top-level
    functions in reverse order and every comment dropped; it still parses.
"""
from __future__ import annotations

import ast
import builtins
import io
import random
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("acc", "tmp", "val", "res", "buf", "cur", "nxt", "agg", "part", "piece", "item", "elem", "thing", "stuff")


def local_names(tree: ast.Module) -> set[str]:
    """Names bound inside functions (assignments, loop targets, nested parameters), minus the
    parameters of top-level functions (their names are the curriculum's signatures) and anything
    module-level or builtin."""
    top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for n in tree.body:
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            top |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.Assign):
            top |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    signature = {a.arg for f in tree.body if isinstance(f, ast.FunctionDef)
                 for a in [*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs,
                           *filter(None, [f.args.vararg, f.args.kwarg])]}
    found: set[str] = set()
    for f in tree.body:
        if not isinstance(f, ast.FunctionDef):
            continue
        for n in ast.walk(f):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                found.add(n.id)
            elif isinstance(n, ast.arg) and n.arg not in signature:
                found.add(n.arg)
    return found - top - signature - set(dir(builtins)) - {"self"}


def rename(source: str, mapping: dict[str, str], drop_comments: bool = True) -> str:
    """Rename NAME tokens (not attributes, not keyword arguments) and drop comments, in place."""
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []
    previous = None
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        if tok.type == tokenize.NAME and tok.string in mapping:
            after = next((t for t in tokens[i + 1:] if t.type not in (tokenize.NL, tokenize.COMMENT)), None)
            attribute = previous is not None and previous.string == "."
            keyword = depth > 0 and after is not None and after.string == "=" and previous is not None \
                and previous.string in ("(", ",")
            if not attribute and not keyword:
                edits.append((tok.start[0], tok.start[1], tok.end[1], mapping[tok.string]))
        elif tok.type == tokenize.COMMENT and drop_comments:
            edits.append((tok.start[0], tok.start[1], tok.end[1], ""))
        if tok.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = tok
    for row, start, end, new in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + new + line[end:]
    return "".join(line.rstrip() + "\n" if line.endswith("\n") else line.rstrip() for line in lines)


def reverse_functions(source: str) -> str:
    """The top-level functions in reverse order (each with its decorators and whatever follows
    it up to the next function); what comes before the first function stays first."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts = [(n.decorator_list[0].lineno if n.decorator_list else n.lineno) - 1
              for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(starts) < 2:
        return source
    head = lines[:starts[0]]
    parts = [lines[a:b] for a, b in zip(starts, [*starts[1:], len(lines)])]
    parts = ["".join(p).rstrip("\n") + "\n\n\n" for p in parts]
    return "".join(head) + "".join(reversed(parts)).rstrip("\n") + "\n"


def disguise(source: str, seed: int = 0) -> str:
    """Every local variable renamed, functions reversed, comments dropped (see the module docstring)."""
    rng = random.Random(seed)
    names = sorted(local_names(ast.parse(source)))
    mapping = {n: f"{rng.choice(WORDS)}_{i}_{rng.randrange(1000)}" for i, n in enumerate(names)}
    return reverse_functions(rename(source, mapping))


def function_order(source: str) -> list[str]:
    return [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]


def test_the_disguise_renames_every_local_and_reverses_the_functions():
    source = (ROOT / "solutions" / "rnn.py").read_text()
    copy = disguise(source, seed=3)
    ast.parse(copy)
    assert function_order(copy) == list(reversed(function_order(source)))
    before = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    after = {n.id for n in ast.walk(ast.parse(copy)) if isinstance(n, ast.Name)}
    renamed = local_names(ast.parse(source))
    assert {"states", "dh_next", "h_before", "da"} <= renamed
    assert not renamed & after and renamed <= before
    assert "#" not in "".join(line for line in copy.splitlines() if not line.lstrip().startswith(('"', "'")))
    assert "def rnn_cell(x_t, h_prev, W_x, W_h, b):" in copy         # the curriculum's signatures stay


def test_the_disguised_solution_still_computes_the_same(tmp_path):
    """Renaming is not breaking: the disguised module gives the solution's numbers."""
    import importlib.util

    import torch

    source = (ROOT / "solutions" / "rnn.py").read_text()
    path = tmp_path / "rnn_disguised.py"
    path.write_text(disguise(source, seed=5))
    spec = importlib.util.spec_from_file_location("rnn_disguised", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    g = torch.Generator().manual_seed(0)
    X, h0 = torch.randn(2, 4, 3, generator=g), torch.randn(2, 5, generator=g)
    W_x, W_h, b = torch.randn(3, 5, generator=g), torch.randn(5, 5, generator=g), torch.randn(5, generator=g)
    dH = torch.randn(2, 4, 5, generator=g)
    ref_spec = importlib.util.spec_from_file_location("rnn_solution", ROOT / "solutions" / "rnn.py")
    reference = importlib.util.module_from_spec(ref_spec)
    ref_spec.loader.exec_module(reference)
    for got, want in zip(module.rnn_bptt(X, h0, W_x, W_h, b, dH), reference.rnn_bptt(X, h0, W_x, W_h, b, dH)):
        assert torch.equal(got, want)


# -- a class of submissions for the similarity tests ---------------------------------------------------
HOSTILE_ID = "<img src=x onerror=alert(1)>"
PAYLOAD = "</pre></td></table><script>alert('pwned')</script><!--"
FIXTURES = ROOT / "tests" / "fixtures" / "submissions"
ONE_LINE = {"gina": "return torch.tanh(x_t @ W_x + h_prev @ W_h + b)",
            "hank": "return (torch.cat([x_t, h_prev], 1) @ torch.cat([W_x, W_h], 0) + b).tanh()"}


def notebook_of(source: str) -> str:
    """`source` as a Jupyter notebook: a markdown cell, one code cell per top-level statement, a magic."""
    import nbformat

    tree, lines = ast.parse(source), source.splitlines()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nb.cells.append(nbformat.v4.new_markdown_cell("# My recurrent network"))
    for node in tree.body:
        nb.cells.append(nbformat.v4.new_code_cell("\n".join(lines[node.lineno - 1:node.end_lineno])))
    nb.cells.append(nbformat.v4.new_code_cell("%timeit rnn_forward"))
    return nbformat.writes(nb)


def make_class(root: Path) -> dict[str, str]:
    """One rnn.py per student; returns student -> what they handed in.

    alice the worked solution; bob alice's, disguised; carol and frank the two independent
    solutions (tests/fixtures/submissions/alt_rnn_*); dave the stub untouched; erin frank's code
    as a notebook; gina and hank the stub with one different line each; ivan.zip carol's,
    disguised; a student whose id and code carry HTML (a copy of alice with a payload)."""
    from scenarios import replace_function

    solution = (ROOT / "solutions" / "rnn.py").read_text()
    stub = (ROOT / "exercises" / "rnn.py").read_text()
    carol = (FIXTURES / "alt_rnn_concat" / "rnn.py").read_text()
    frank = (FIXTURES / "alt_rnn_float64" / "rnn.py").read_text()
    hostile = solution.replace("import torch\n", f"import torch\n# {PAYLOAD}\nNOTE = {PAYLOAD!r}\n", 1)
    texts = {"alice": solution, "bob": disguise(solution, 1), "carol": carol, "dave": stub, "frank": frank,
             HOSTILE_ID: hostile}
    for student, line in ONE_LINE.items():
        texts[student] = replace_function(stub, "rnn_cell", f"def rnn_cell(x_t, h_prev, W_x, W_h, b):\n    {line}")
    for student, text in texts.items():
        (root / student).mkdir(parents=True)
        (root / student / "rnn.py").write_text(text)
    (root / "erin").mkdir()
    (root / "erin" / "rnn.ipynb").write_text(notebook_of(frank))
    import zipfile
    with zipfile.ZipFile(root / "ivan.zip", "w") as zf:
        zf.writestr("ivan/rnn.py", disguise(carol, 2))
    return {**texts, "erin": "notebook", "ivan": "zip"}


def make_previous_term(root: Path) -> None:
    """Last term: olga handed in carol's solution (disguised), oscar the same as olga."""
    carol = (FIXTURES / "alt_rnn_concat" / "rnn.py").read_text()
    for student in ("olga", "oscar"):
        (root / student).mkdir(parents=True)
        (root / student / "rnn.py").write_text(disguise(carol, 9))
