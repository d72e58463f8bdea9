"""Word expansion of the bash evaluator (:mod:`fsdpcfg.check.runscript.bash`): quoting, parameter expansion
(``${X:-d}``, ``${A[@]}``, ``${@:2}``, ``${X##*/}`` ...), word splitting, ``~``, and words tree-sitter-bash
splits (``$A/$B/f``); substitutions, arithmetic and tests are :mod:`fsdpcfg.check.runscript.operations`'s."""

from __future__ import annotations

import fnmatch
import re

from fsdpcfg.check.runscript.operations import Operations, _int
from fsdpcfg.check.runscript.words import _F, MAX_VALUE, TOO_LONG, Word, _Exit, _head, _join, _State, _union

#: ``$NAME``, ``${NAME}``, ``$1``, ``$@`` in a word tree-sitter-bash left unparsed (``/$B/f.parquet`` after ``$A``)
_RAW_PARAM = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#])\}|([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!]))")


class Expander(Operations):
    """Expansion methods of the evaluator; the evaluator sets the attributes :class:`Operations` declares
    (``src``, ``environ``, ``extra``, ``script_path``, ``notes``, ``env_used``, ``uses_args``, ``in_test``, ...)."""

    # ---- words -----------------------------------------------------------------------------------------
    def words(self, node, st: _State) -> list[Word]:
        """Expand ``node`` into the fields bash would pass as arguments (word splitting included)."""
        line = self.line(node)
        return [Word(f.text, f.line or line, f.unknown, f.env, f.cli) for f in self.fields(node, st, quoted=False)]

    def arg_words(self, nodes, st: _State) -> list[Word]:
        """The words of a command's argument nodes; nodes that touch (no blank between them) are one word, as
        bash reads them (tree-sitter-bash splits ``x=$A/$B/f`` into two arguments)."""
        out: list[Word] = []
        group: list = []
        for n in list(nodes) + [None]:
            if n is not None and group and n.start_byte == group[-1].end_byte:
                group.append(n)
                continue
            if len(group) == 1:
                out.extend(self.words(group[0], st))
            elif group:
                line = self.line(group[0])
                out.extend(
                    Word(f.text, f.line or line, f.unknown, f.env, f.cli) for f in self.joined(group, st, quoted=False)
                )
            group = [n] if n is not None else []
        return out

    def scalar(self, node, st: _State, pattern: bool = False, assignment: bool = False) -> Word:
        """Expand ``node`` into one string (no word splitting, as in an assignment's value)."""
        fs = self.fields(node, st, quoted=True, pattern=pattern, assignment=assignment)
        if not fs:
            return Word("", self.line(node))
        f = fs[0]
        for g in fs[1:]:
            f = f + _F(" ") + g
        return Word(f.text, self.line(node), f.unknown, f.env, f.cli)

    def fields(self, node, st: _State, quoted: bool, pattern: bool = False, assignment: bool = False) -> list[_F]:
        t = node.type
        if t in (
            "word",
            "number",
            "extglob_pattern",
            "regex",
            "variable_name",
            "test_operator",
            "brace_expression",
            "special_variable_name",
        ):
            raw = self.text(node)
            if t == "word" and not quoted and raw.startswith("~") and (raw == "~" or raw.startswith("~/")):
                home = self.env("HOME", node)
                raw = home.text + raw[1:]
                return [_F(_unescape(raw, pattern), home.unknown, home.env)]
            if t == "word" and assignment and raw.startswith("~/"):
                home = self.env("HOME", node)
                return [_F(home.text + _unescape(raw[1:], pattern), home.unknown, home.env)]
            if t == "word" and not pattern and _RAW_PARAM.search(raw):
                return self.raw_fields(raw, st, node, quoted)
            return [_F(_unescape(raw, pattern) if t in ("word",) else raw)]
        if t == "command_name":
            kids = node.named_children
            return self.fields(kids[0], st, quoted, pattern) if kids else [_F(self.text(node))]
        if t == "raw_string":
            return [_F(self.text(node)[1:-1])]
        if t == "ansi_c_string":
            return [_F(_ansi_c(self.text(node)[2:-1]))]
        if t in ("string", "translated_string"):
            return self.string(node, st)
        if t == "concatenation":
            return self.joined(node.children, st, quoted, pattern, assignment)
        if t == "simple_expansion":
            name = self.text(node)[1:]
            return self.split(self.param(name, st, node), quoted, name in ("@", "*"))
        if t == "expansion":
            return self.expansion(node, st, quoted)
        if t == "command_substitution":
            return self.split([self.substitution(node, st)], quoted, False)
        if t == "arithmetic_expansion":
            inner = node.named_children[0] if node.named_children else None
            v = self.arith_node(inner, st) if inner is not None else 0
            if v is None:
                return [_F(self.text(node), (f"`{self.text(node)}` is arithmetic on a value the check cannot know",))]
            return [_F(str(v))]
        if t == "process_substitution":
            return [_F(self.text(node), (f"`{self.text(node)}` is a process substitution",))]
        return [_F(self.text(node), (f"`{self.text(node)}` ({t}) is not read by the check",))]

    def joined(
        self, nodes, st: _State, quoted: bool, pattern: bool = False, assignment: bool = False, dollar: str = ""
    ) -> list[_F]:
        """The fields of nodes that touch one another (one shell word): the parts of a concatenation, or the
        arguments tree-sitter-bash splits one word into (``x=$A/$B/f`` parses as ``x=$A/$`` and ``B/f``). A
        bare ``$`` token is the start of the next part's variable name, as bash reads it."""
        out: list[_F] = []
        pos = nodes[0].start_byte if nodes else 0
        for c in nodes:
            if self.start(c) > pos:  # text between parts (not a node of its own)
                out = _join(out, [_F(self.src[pos : self.start(c)].decode())])
            pos = c.end_byte
            if c.type == "$" and not c.is_named:
                dollar = "$"
                continue
            if c.type == "concatenation" and c.children and c.children[-1].type == "$":
                out = _join(out, self.joined(c.children[:-1], st, quoted, pattern, assignment))
                dollar = "$"
                continue
            if dollar and c.type in ("word", "number"):
                out = _join(out, self.raw_fields(dollar + self.text(c), st, c, quoted))
            elif dollar and c.type == "concatenation":
                out = _join(out, self.joined(c.children, st, quoted, pattern, assignment, dollar))
            else:
                if dollar:
                    out = _join(out, [_F(dollar)])
                out = _join(out, self.fields(c, st, quoted, pattern, assignment))
            dollar = ""
        if dollar:
            out = _join(out, [_F(dollar)])
        return out

    def raw_fields(self, raw: str, st: _State, node, quoted: bool) -> list[_F]:
        """An unquoted word's text that tree-sitter-bash did not split into expansions: backslash escapes and
        ``$NAME``/``${NAME}``/``$1`` are expanded as bash would (other text is literal)."""
        out: list[_F] = [_F("")]
        buf, i = "", 0
        while i < len(raw):
            ch = raw[i]
            if ch == "\\" and i + 1 < len(raw):
                buf += raw[i + 1] if raw[i + 1] != "\n" else ""
                i += 2
                continue
            m = _RAW_PARAM.match(raw, i) if ch == "$" else None
            if m is None:
                buf += ch
                i += 1
                continue
            if buf:
                out = _join(out, [_F(buf)])
                buf = ""
            name = m.group(1) or m.group(2)
            out = _join(out, self.split(self.param(name, st, node), quoted, name in ("@", "*")))
            i = m.end()
        if buf:
            out = _join(out, [_F(buf)])
        return out

    def string(self, node, st: _State) -> list[_F]:
        """A double-quoted string: one field, except where ``"$@"`` or ``"${A[@]}"`` make several."""
        out: list[_F] = [_F("")]
        pos = node.start_byte + 1 if self.text(node).startswith('"') else node.start_byte
        if self.text(node).startswith('$"'):
            pos = node.start_byte + 2
        end = node.end_byte - 1
        for c in node.named_children:
            if self.start(c) > pos:
                out = _join(out, [_F(_unescape_dq(self.src[pos : self.start(c)].decode()))])
            if c.type == "string_content":
                out = _join(out, [_F(_unescape_dq(self.text(c)))])
            else:
                got = self.fields(c, st, quoted=True)
                if not got and _is_all_elements(self.text(c)):
                    # "$@" / "${A[@]}" with no elements: no field at all (unless other text joins it)
                    if len(node.named_children) == 1:
                        return []
                out = _join(out, got)
            pos = c.end_byte
        if end > pos:
            out = _join(out, [_F(_unescape_dq(self.src[pos:end].decode()))])
        return out

    def split(self, values: list[_F], quoted: bool, all_elements: bool) -> list[_F]:
        """Word splitting of an expansion's values: quoted ``"$@"``/``"${A[@]}"`` keep one field per element;
        quoted otherwise join with a space; unquoted split known values on whitespace."""
        if quoted:
            if all_elements:
                return values
            if not values:
                return [_F("")]
            f = values[0]
            for g in values[1:]:
                f = f + _F(" ") + g
            return [f]
        out: list[_F] = []
        for v in values:
            if v.unknown or v.cli:
                out.append(v)
            else:
                out.extend(_F(p, (), v.env, v.line) for p in v.text.split())
        return out

    def env(self, name: str, node) -> Word:
        """A variable the script does not set, from the environment of the check (its use recorded)."""
        if name in self.environ:
            value = self.environ[name]
            self.env_used.setdefault(name, (value, self.line(node)))
            return Word(value, self.line(node), (), (f"{name}={value}",))
        return Word(
            f"${name}", self.line(node), (f"`${name}` is not set by the script nor in the environment of the check",)
        )

    def all_args(self, st: _State, node) -> list[Word]:
        self.uses_args = True
        extra = [Word(x, 0, (), (), True) for x in self.extra]
        return (st.args or []) + extra

    def param(self, name: str, st: _State, node) -> list[_F]:
        """The values of parameter ``name`` (several for ``@``, ``*`` and arrays), [] when unset/empty."""
        vals = self.lookup(name, st, node)
        if vals is None:
            return self._unset(name, st, node)
        keep = name in ("@", "*")  # an element keeps its own line; a variable's value takes the word's
        return [_F(w.text, w.unknown, w.env, w.line if keep else 0, w.cli) for w in vals]

    def _unset(self, name: str, st: _State, node) -> list[_F]:
        """``$NAME`` that neither the script nor the environment sets: bash gives nothing, but the script's
        author meant a value, so it is unknown (not a guessed empty string)."""
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name not in st.vars and not self.in_test:
            return [_F(f"${name}", (f"`${name}` is not set by the script nor in the environment of the check",))]
        return []

    def lookup(self, name: str, st: _State, node, index: str | None = None) -> list[Word] | None:
        """Return the value(s) of ``name`` (``index`` ``@``/``*``: every element; a number: that element;
        None: element 0 of an array), ``None`` when unset; an unknown value as a list of one unknown Word."""
        line = self.line(node)
        if name in ("@", "*"):
            return self.all_args(st, node)
        if (name == "#" or (name.isdigit() and name != "0")) and st.args is None and not st.args_assumed:
            if (self.in_test or self.in_case) and self.forking():  # type: ignore[attr-defined]
                if self.decide(["no arguments", "with arguments"]) == 0:  # type: ignore[attr-defined]
                    st.args = []
                else:
                    st.args_assumed = True
                return self.lookup(name, st, node, index)
        if name == "#":
            if st.args is None:
                return [
                    Word(
                        "$#",
                        line,
                        ("`$#`: the script's arguments were not given (check it with `fsdpcfg check SCRIPT -- ARGS`)",),
                    )
                ]
            return [Word(str(len(st.args)), line)]
        if name.isdigit():
            i = int(name)
            if i == 0:
                return [Word(self.script_path, line)]
            if st.args is None:
                return [
                    Word(
                        f"${name}",
                        line,
                        (
                            f"`${name}`: the script's positional argument was not given "
                            "(check it with `fsdpcfg check SCRIPT -- ARGS`)",
                        ),
                    )
                ]
            return [st.args[i - 1]] if i <= len(st.args) else None
        if name in ("?", "$", "!", "-"):
            return [Word(f"${name}", line, (f"`${name}` is only known when the shell runs",))]
        if name == "BASH_SOURCE":
            return [Word(self.script_path, line)]
        if name in ("RANDOM", "SECONDS", "LINENO", "PPID", "BASHPID", "EPOCHSECONDS"):
            return [Word(f"${name}", line, (f"`${name}` is only known when the shell runs",))]
        if name not in st.vars:
            w = self.env(name, node)
            return None if not w.known and name not in self.environ else [w]
        vals = st.vars[name]
        if index is None or name not in st.arrays:
            if index not in (None, "@", "*", "0"):
                return None
            return vals if index in ("@", "*") else vals[:1]
        if index in ("@", "*"):
            return vals
        try:
            i = int(index)
        except ValueError:
            return [Word(f"${{{name}[{index}]}}", line, ("an array index the check cannot know",))]
        return [vals[i]] if -len(vals) <= i < len(vals) else None

    def expansion(self, node, st: _State, quoted: bool) -> list[_F]:
        text = self.text(node)
        kids = [c for c in node.children if c.type not in ("${", "}")]
        name_i = next(
            (i for i, c in enumerate(kids) if c.type in ("variable_name", "special_variable_name", "subscript")), None
        )
        if name_i is None:
            if re.fullmatch(r"\$\{[0-9]+\}", text):
                return self.split(self.param(text[2:-1], st, node), quoted, False)
            return [_F(text, (f"`{text}` is a parameter expansion the check does not read",))]
        prefix = "".join(self.text(c) for c in kids[:name_i])
        name_node = kids[name_i]
        index = None
        if name_node.type == "subscript":
            idx = name_node.child_by_field_name("index")
            index = self.text(idx)
            if index not in ("@", "*"):
                v = self.arith_node(idx, st)
                index = str(v) if v is not None else index
            name = self.text(name_node.child_by_field_name("name"))
        else:
            name = self.text(name_node)
        rest = kids[name_i + 1 :]
        all_elements = index in ("@", "*") or name in ("@", "*")
        if prefix == "!":
            return [_F(text, (f"`{text}` is an indirect expansion the check does not read",))]
        vals = self.lookup(name, st, node, index)
        if vals is not None and not (all_elements and (name in st.arrays or name in ("@", "*"))):
            # a variable's value takes the line of the word it is expanded in; an array element keeps its own
            vals = [Word(w.text, 0, w.unknown, w.env, w.cli) for w in vals]
        if prefix == "#":
            if vals is not None and any(not w.known for w in vals):
                return [_F(text, vals[0].unknown)]
            n = len(vals or []) if all_elements else len((vals or [Word("", 0)])[0].text)
            return [_F(str(n))]
        if not rest:
            if vals is None:
                return self._unset(name, st, node)
            fs = [_F(w.text, w.unknown, w.env, w.line, w.cli) for w in vals]
            if index == "*" and quoted:
                return self.split(fs, True, False)
            return self.split(fs, quoted, all_elements and not (index == "*" and quoted))
        op = self.text(rest[0])
        operand_nodes = rest[1:]
        unknown_val = vals is not None and any(not w.known for w in vals)
        is_set = vals is not None
        is_null = not vals or (len(vals) == 1 and vals[0].known and vals[0].text == "")
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            if unknown_val and not (st.args is None and name.isdigit() and op in (":-", "-", ":=", "=")):
                assert vals is not None  # unknown_val implies a value
                return [_F(text, vals[0].unknown)]
            if st.args is None and name.isdigit():
                is_set, is_null = False, True  # not given: as `bash run.sh` with no arguments
            use_default = (not is_set) or (op.startswith(":") and is_null)
            if op in (":+", "+"):
                if use_default:
                    return [] if not quoted else [_F("")]
                return self.split([self.operand(operand_nodes, node, st)], quoted, False)
            if op in (":?", "?"):
                if use_default and name.isdigit() and st.args is not None:
                    self.note(node, "exit", f"`{text}`: the script stops here because `{name}` is not set")
                    raise _Exit("1")
                if use_default:
                    # a value the user must give where the script runs (the environment, an argument): unknown
                    # here, not the end of the script (bash would stop only where it is not given)
                    why = (f"`{name}` must be given where the script runs (`{text[:80]}` stops the script without it)",)
                    if not name.isdigit() and name not in ("@", "*"):
                        st.vars[name] = [Word(f"${name}", self.line(node), why)]
                        st.arrays.discard(name)
                    return [_F(text, why)]
                assert vals is not None  # not use_default: the variable is set
                fs = [_F(w.text, w.unknown, w.env, w.line, w.cli) for w in vals]
                return self.split(fs, quoted, all_elements)
            if not use_default:
                assert vals is not None  # not use_default: the variable is set
                fs = [_F(w.text, w.unknown, w.env, w.line, w.cli) for w in vals]
                return self.split(fs, quoted, all_elements)
            d = self.operand(operand_nodes, node, st)
            if op in (":=", "=") and not name.isdigit():
                st.vars[name] = [Word(d.text, self.line(node), d.unknown, d.env)]
            return self.split([d], quoted, False)
        if op == ":" and all_elements:
            return self.split(self.slice_elements(name, vals or [], operand_nodes, node, st), quoted, True)
        if unknown_val:
            assert vals is not None  # unknown_val implies a value
            return [_F(text, vals[0].unknown)]
        fs = [_F(w.text, w.unknown, w.env, w.line, w.cli) for w in (vals or [Word("", 0)])]
        out = []
        for f in fs:
            r = self.string_op(f.text, op, operand_nodes, node, st)
            if r is None:
                return [_F(text, (f"`{text}` is a parameter expansion the check does not read",))]
            if isinstance(r, _F):
                out.append(_F(r.text, r.unknown, _union(f.env, r.env), f.line))
            else:
                out.append(_F(r, (), f.env, f.line))
        return self.split(out, quoted, all_elements)

    def slice_elements(self, name: str, vals: list[Word], operand_nodes, node, st: _State) -> list[_F]:
        """``${@:OFFSET:LENGTH}`` / ``${A[@]:OFFSET:LENGTH}``: the elements from OFFSET (for ``@``, ``$OFFSET``
        first: ``${@:1}`` is every argument, ``${@:0}`` starts with ``$0``); a negative LENGTH ends that many
        elements before the end."""
        groups: list[list] = [[]]
        for c in operand_nodes:
            if c.type == ":" and not c.is_named:
                groups.append([])
            else:
                groups[-1].append(c)
        nums = [_int(Word(self.operand(g, node, st).text, 0)) if g else None for g in groups]
        keep = [_F(w.text, w.unknown, w.env, w.line, w.cli) for w in vals]
        if name in ("@", "*"):
            keep = [_F(self.script_path)] + keep
        if nums[0] is None or (len(nums) > 1 and nums[1] is None):
            text = self.text(node)
            return [_F(text, (f"`{text}`: an offset the check cannot know",))]
        off = nums[0] if nums[0] >= 0 else max(len(keep) + nums[0], 0)
        out = keep[off:]
        if len(nums) > 1:
            n = nums[1]
            assert n is not None
            out = out[:n] if n >= 0 else out[:n]
        return out

    def operand(self, nodes, parent, st: _State, pattern: bool = False, tilde: bool = True) -> _F:
        """The word after an expansion operator (``${X:-THIS}``), as one string; text between its nodes kept."""
        out = _F("")
        if not nodes:
            return out
        if tilde and self.text(nodes[0]).startswith("~/") and nodes[0].type in ("word", "concatenation"):
            home = self.env("HOME", parent)  # bash expands a tilde in the word of ${X:-~/dir}
            out = _F(home.text, home.unknown, home.env)
            rest = self.operand(nodes, parent, st, pattern, tilde=False)
            return out + _F(rest.text[1:], rest.unknown, rest.env)
        pos = self.start(nodes[0])
        for c in nodes:
            if self.start(c) > pos:
                out = out + _F(self.src[pos : self.start(c)].decode())
            for f in self.fields(c, st, quoted=True, pattern=pattern):
                out = out + f
            pos = c.end_byte
        return out

    def string_op(self, s: str, op: str, operands, node, st: _State):
        groups: list[list] = [[]]
        for c in operands:
            if c.type in ("/", ":") and not c.is_named:
                groups.append([])
            else:
                groups[-1].append(c)
        first = self.operand(groups[0], node, st, pattern=True)
        if first.unknown:
            return _F(self.text(node), first.unknown)
        pat = first.text
        if op in ("#", "##"):
            rng = range(len(s) + 1) if op == "#" else range(len(s), -1, -1)
            for i in rng:
                if fnmatch.fnmatchcase(s[:i], pat):
                    return s[i:]
            return s
        if op in ("%", "%%"):
            rng = range(len(s), -1, -1) if op == "%" else range(len(s) + 1)
            for i in rng:
                if fnmatch.fnmatchcase(s[i:], pat):
                    return s[:i]
            return s
        if op in ("/", "//"):
            rep = self.operand(groups[1], node, st) if len(groups) > 1 else _F("")
            if rep.unknown or any(ch in pat for ch in "*?["):
                return None
            return s.replace(pat, rep.text, 1 if op == "/" else -1)
        if op == ":":
            try:
                off = int(pat)
                length = int(self.operand(groups[1], node, st).text) if len(groups) > 1 else None
            except ValueError:
                return None
            sub = s[off:]
            return sub if length is None else (sub[:length] if length >= 0 else sub[:length])
        if op == "^^":
            return s.upper()
        if op == ",,":
            return s.lower()
        if op == "^":
            return s[:1].upper() + s[1:]
        if op == ",":
            return s[:1].lower() + s[1:]
        return None


def _concat(a: Word, b: Word) -> Word:
    if TOO_LONG in a.unknown or TOO_LONG in b.unknown or len(a.text) + len(b.text) > MAX_VALUE:
        return Word(_head(a.text, b.text), b.line, _union(_union(a.unknown, b.unknown), (TOO_LONG,)), a.env)
    return Word(a.text + b.text, b.line, _union(a.unknown, b.unknown), _union(a.env, b.env))


def _is_all_elements(text: str) -> bool:
    """True for an expansion of every element (``$@``, ``${@}``, ``${A[@]}``) or a slice of them (``${@:1}``,
    ``${A[@]:1:2}``): quoted, with no element it is no word at all, as bash gives it (``f "${@:1}"`` with no
    arguments calls ``f`` with none)."""
    return text in ("$@", "${@}") or bool(re.fullmatch(r"\$\{(?:@|[A-Za-z_][A-Za-z0-9_]*\[@\])(?::[^}]*)?\}", text))


def _unescape(raw: str, pattern: bool = False) -> str:
    """An unquoted word: a backslash quotes the next character (kept as ``\\x`` in a pattern)."""
    if "\\" not in raw:
        return raw
    out, i = [], 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt == "\n":
                i += 2
                continue
            out.append(("[" + nxt + "]") if pattern and nxt in "*?[" else nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _unescape_dq(raw: str) -> str:
    """Inside double quotes a backslash quotes only ``$ ` " \\`` and a newline."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


def _ansi_c(raw: str) -> str:
    table = {
        "n": "\n",
        "t": "\t",
        "r": "\r",
        "\\": "\\",
        "'": "'",
        '"': '"',
        "a": "\a",
        "b": "\b",
        "e": "\x1b",
        "f": "\f",
        "v": "\v",
    }
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), "\\" + m.group(1)), raw)
