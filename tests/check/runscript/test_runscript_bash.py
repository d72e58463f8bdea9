"""The bash evaluator of run scripts (fsdpcfg.check.runscript.bash): each construct, with the values bash gives."""

from __future__ import annotations

import textwrap

import pytest

from fsdpcfg.check.runscript import evaluate

ENV = {"HOME": "/home/u"}


def run(script: str, **kw):
    kw.setdefault("environ", ENV)
    return evaluate(textwrap.dedent(script), **kw)


def words(script: str, **kw) -> list[str]:
    """The arguments of the script's last command (its name dropped), as bash would pass them."""
    ev = run(script, **kw)
    assert ev.commands, "no command"
    return [w.text for w in ev.commands[-1].argv[1:]]


def last(script: str, **kw):
    return run(script, **kw).commands[-1]


def test_assignments_quotes_and_concatenation():
    assert words("""
        A=1
        B="two words"
        C='$A literal'
        D=pre${A}post
        cmd $A "$B" "$C" $D x=$A,"$B" $'tab\\there'
    """) == ["1", "two words", "$A literal", "pre1post", "x=1,two words", "tab\there"]


def test_unquoted_expansion_is_split_and_an_empty_one_vanishes():
    assert words('V="a=1 b=2"\nE=\ncmd $V $E "$E" end') == ["a=1", "b=2", "", "end"]


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("${X:-d}", "d"),
        ("${X-d}", "d"),
        ("${EMPTY:-d}", "d"),
        ("${EMPTY-d}", ""),
        ("${SET:-d}", "v"),
        ("${SET:+alt}", "alt"),
        ("${X:+alt}", ""),
        ("${#SET}", "1"),
        ("${P##*/}", "c.txt"),
        ("${P#*/}", "a/b/c.txt"),
        ("${P%/*}", "/a/b"),
        ("${P%%.*}", "/a/b/c"),
        ("${P/b/B}", "/a/B/c.txt"),
        ("${SET^^}", "V"),
        ("${L:1:3}", "bcd"),
        ("${X:-$HOME/m}", "/home/u/m"),
        ('${X:-"q d"}', "q d"),
        ("${X:-~/d/e}", "/home/u/d/e"),
    ],
)
def test_parameter_expansion(expr, expected):
    got = words(f'SET=v\nEMPTY=\nP=/a/b/c.txt\nL=abcdef\ncmd "{expr}"')
    assert got == [expected]


def test_assign_default_sets_the_variable():
    assert words("echo ${X:=first} >/dev/null\n: ${Y=second}\ncmd $X $Y") == ["first", "second"]


def test_arrays_append_and_expansions():
    ev = run("""
        DATA=(
            data.a=1   # a comment
            "data.b=two words"
        )
        DATA+=(data.c=3)
        EMPTY=()
        S=x
        S+=y
        A[5]=z
        cmd "${DATA[@]}" "${EMPTY[@]}" ${DATA[1]} "${DATA[*]}" ${#DATA[@]} $S
    """)
    c = ev.commands[-1]
    assert [w.text for w in c.argv[1:]] == [
        "data.a=1",
        "data.b=two words",
        "data.c=3",
        "data.b=two",
        "words",
        "data.a=1 data.b=two words data.c=3",
        "3",
        "xy",
    ]
    # each array element keeps the line where it was written
    assert [w.line for w in c.argv[1:4]] == [3, 4, 6]
    assert c.argv[-1].line == 11  # a variable takes the line of the word it is expanded in


def test_positional_arguments_and_shift():
    script = 'ENGINE=${1:-vllm}\nN=${2:-8}\nshift 1\ncmd $ENGINE $N "$@" $#'
    assert words(script, args=["sglang", "4", "x=1"]) == ["sglang", "4", "4", "x=1", "2"]
    ev = run(script)  # not given: defaults as `bash run.sh`, and $# unknown
    argv = ev.commands[-1].argv
    assert [w.text for w in argv[1:3]] == ["vllm", "8"]
    assert not argv[-1].known and "-- ARGS" in argv[-1].unknown[0]


def test_bare_positional_argument_not_given_is_unknown():
    [w] = last("cmd $1").argv[1:]
    assert not w.known and "$1" in w.unknown[0]


def test_dollar_at_expands_to_remaining_args_then_the_extra_overrides():
    c = last('shift\ncmd a "$@"', args=["skip", "b"], extra=["k=v"])
    assert [w.text for w in c.argv[1:]] == ["a", "b", "k=v"]
    assert c.uses_args and c.argv[-1].cli and not c.argv[-2].cli


def test_environment_variables_are_named():
    ev = run("M=${MODEL:-default}\ncmd $M ~/data $NOPE", environ={"HOME": "/h", "MODEL": "/m"})
    a = ev.commands[-1].argv
    assert [w.text for w in a[1:3]] == ["/m", "/h/data"]
    assert a[1].env == ("MODEL=/m",) and a[2].env == ("HOME=/h",)
    assert not a[3].known and "not set by the script nor in the environment" in a[3].unknown[0]
    assert set(ev.env_used) == {"MODEL", "HOME"}


def test_export_local_declare_and_env_prefix():
    ev = run("""
        export A=1 B=2
        declare -a ARR=(x y)
        f() { local A=inner; cmd2 $A; }
        f
        PREFIX=only python3 -m m $A $B "${ARR[@]}" $PREFIX
    """)
    assert [w.text for w in ev.commands[0].argv] == ["cmd2", "inner"]
    c = ev.commands[-1]
    assert [w.text for w in c.argv[3:7]] == ["1", "2", "x", "y"]
    assert not c.argv[7].known  # PREFIX is for the command only: unset in the script
    assert c.prefix["PREFIX"].text == "only"


def test_functions_get_their_own_positional_arguments():
    assert words('launch() { cmd "$@" last=$1; }\nlaunch a=1 b=2') == ["a=1", "b=2", "last=a=1"]


def test_line_continuations_and_comments():
    c = last("cmd \\\n  a=1 \\\n  b=2  # trailing\n")
    assert [(w.text, w.line) for w in c.argv[1:]] == [("a=1", 2), ("b=2", 3)]


@pytest.mark.parametrize("engine, expected", [("vllm", "R=vllm-branch"), ("sglang", "R=sg"), ("other", "R=star")])
def test_case_takes_the_branch_bash_takes(engine, expected):
    script = """
        ENGINE=${1:-vllm}
        case "$ENGINE" in
            vllm) R=vllm-branch ;;
            sglang|sg*) R=sg ;;
            *) R=star ;;
        esac
        cmd R=$R
    """
    assert words(script, args=[engine]) == [expected]


@pytest.mark.parametrize(
    "cond, expected",
    [
        ('[ "$X" = 1 ]', "yes"),
        ('[ "$X" != 1 ]', "no"),
        ("[[ $X == 1 ]]", "yes"),
        ("[[ $N == v* ]]", "yes"),
        ('[[ "$N" == "v*" ]]', "no"),
        ("[ $X -eq 1 ]", "yes"),
        ("[ $X -gt 1 ]", "no"),
        ('[ -z "$E" ]', "yes"),
        ('[ -n "$E" ]', "no"),
        ("test $X = 1", "yes"),
        ("[[ $X == 1 && $N == vllm ]]", "yes"),
        ("[[ $X == 2 || $N == vllm ]]", "yes"),
        ("! [ $X = 1 ]", "no"),
        ("[ $X = 1 ] && [ $N = x ]", "no"),
        ("true", "yes"),
        ("false", "no"),
    ],
)
def test_if_takes_the_branch_bash_takes(cond, expected):
    script = f"X=1\nN=vllm\nE=\nif {cond}; then R=yes; elif false; then R=never; else R=no; fi\ncmd $R"
    assert words(script) == [expected]


def test_and_or_lists():
    assert words('X=\n[ -z "$X" ] && X=filled\n[ -n "$X" ] || X=never\ncmd $X') == ["filled"]


def test_unknown_condition_reads_every_branch_and_a_differing_value_becomes_unknown():
    ev = run("""
        SAME=a
        if [ -f /etc/some-file ]; then
            V=one; SAME=b; python3 -m verl.trainer.main_ppo in_then=1
        else
            V=two; SAME=b
        fi
        cmd $V $SAME
    """)
    assert [n.kind for n in ev.notes] == ["condition"]
    then_cmd, final = ev.commands
    assert then_cmd.conditional and [w.text for w in then_cmd.argv[3:]] == ["in_then=1"]
    v, same = final.argv[1:]
    assert not v.known and "set differently by branches" in v.unknown[0]
    assert same.known and same.text == "b"  # both branches agree
    assert not final.conditional


def test_a_path_that_exits_does_not_continue():
    ev = run('if [ "$#" -lt 1 ]; then echo usage; exit 1; fi\nM=${1:-x}\ncmd $M', args=[])
    assert ev.commands == [] and any(n.kind == "exit" for n in ev.notes)
    ev = run('if [ "$#" -lt 1 ]; then echo usage; exit 1; fi\ncmd ok')  # args not given: maybe exits
    assert [w.text for w in ev.commands[-1].argv] == ["cmd", "ok"]


def test_exit_stops_the_script():
    ev = run("cmd one\nexit 0\ncmd two")
    assert [c.argv[1].text for c in ev.commands] == ["one"]


def test_for_loop_over_a_literal_list():
    ev = run("for e in vllm sglang; do cmd rollout=$e; done")
    assert [c.argv[1].text for c in ev.commands] == ["rollout=vllm", "rollout=sglang"]


def test_arithmetic():
    assert words("N=4\nG=${GPUS:-8}\ncmd $((N * G)) $(( (N + 2) / 3 )) $((N ** 2 % 5))") == ["32", "2", "1"]
    [w] = last("cmd $((N * $(nproc)))").argv[1:]
    assert not w.known


def test_command_substitution_is_unknown_and_never_run():
    [a, b] = last("cmd x=$(nproc) y=`hostname`").argv[1:]
    assert not a.known and "command substitution" in a.unknown[0] and a.text == "x=$(nproc)"
    assert not b.known


def test_script_folder_idiom_is_computed_not_run():
    [w] = last(
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\ncmd $HERE/config.yaml', script_path="/abs/dir/run.sh"
    ).argv[1:]
    assert w.known and w.text == "/abs/dir/config.yaml"
    assert words("B=$(basename /a/b/model.tar .tar)\ncmd $B") == ["model"]


def test_pipelines_subshells_and_redirections():
    ev = run("(X=inner; cmd a) > log 2>&1\npython3 -m m $X 2>&1 | tee out.log\ncat <<EOF > f.yaml\nk: $X\nEOF\n")
    names = [c.argv[0].text for c in ev.commands]
    assert names == ["cmd", "python3", "tee", "cat"]
    x = ev.commands[1].argv[-1]
    assert x.text == "$X" and not x.known  # X did not leave the subshell


def test_exec_replaces_the_shell():
    ev = run("exec python3 -m m a=1\ncmd never")
    assert [[w.text for w in c.argv] for c in ev.commands] == [["python3", "-m", "m", "a=1"]]


def test_source_and_eval_are_not_followed():
    ev = run('. ./env.sh\neval "X=1"\ncmd')
    assert [n.kind for n in ev.notes] == ["skipped", "skipped"]


def test_syntax_error_line_is_reported():
    ev = run("cmd ok\nif then fi (\n")
    assert ev.syntax_error_line == 2
    assert [c.argv[1].text for c in ev.commands] == ["ok"]


def test_arrays_that_undecidable_branches_change_keep_their_shared_part_and_name_the_rest():
    ev = run("""
        R=(a.name=vllm a.n=4)
        case "$(uname)" in
            Linux) R+=(a.tp=2) ;;
            *) R=(a.name=sglang a.n=4) ;;
        esac
        cmd "${R[@]}"
    """)
    got = [(w.text, w.known) for w in ev.commands[-1].argv[1:]]
    assert got == [("a.name=vllm", False), ("a.n=4", True), ("a.tp=2", False)]
    assert "some branches" in ev.commands[-1].argv[1].unknown[0]


def test_arrays_of_other_words_keep_their_shared_start():
    ev = run('A=(x y)\nif [ -d /d ]; then A+=(z); fi\ncmd "${A[@]}"')
    assert [(w.text, w.known) for w in ev.commands[-1].argv[1:]] == [("x", True), ("y", True), ("z", False)]


def test_script_folder_with_cd_dashdash_and_redirections():
    [w] = last(
        'D=$(cd -- "$(dirname "$0")/.." >/dev/null 2>&1 && pwd)\ncmd $D/x.py', script_path="/r/examples/run.sh"
    ).argv[1:]
    assert w.known and w.text == "/r/x.py"


def test_an_unset_variable_is_empty_in_a_test_and_unknown_in_a_word():
    ev = run('[ -z "$NOT_SET" ] && X=default\nif test -n "$NOT_SET"; then X=other; fi\ncmd $X k=$NOT_SET')
    x, k = ev.commands[-1].argv[1:]
    assert x.text == "default" and not k.known


#: scripts whose last command ``cmd`` gets what bash gives: strings holding several expansions (tree-sitter-bash
#: puts the space between two expansions inside the second node; a verl example built its overrides this way,
#: ``ACTOR_CONFIG="$ACTOR_CONFIG $REF_CONFIG"``, and the reference section's keys were lost)
SPACED = [
    'A=a.x=1\nR=r.x=2\nB="$A $R"\ncmd $B',
    'A=a.x=1\nR=r.x=2\nB="$A $R"\ncmd "$B"',
    'A=a\nB="$A  ${A}\t$A"\ncmd "$B"',
    'A="a.x=1 \\\n   a.y=2"\nR="\n    r.x=1 \\\n    r.y=2"\nA="$A $R"\nL=(\n    k=1\n    $A\n)\ncmd "${L[@]}"',
    'A=1\ncmd "${X:-$A $A}" "$A ${A}"',
    'A=1\nB=("$A $A" x)\ncmd "${B[@]} $A" "$A ${A}x"',
]


@pytest.mark.parametrize("script", SPACED, ids=[f"spaced{i}" for i in range(len(SPACED))])
def test_several_expansions_in_one_string_give_what_bash_gives(script):
    import subprocess

    ours = [w.text for w in run(script).commands[-1].argv[1:]]
    out = subprocess.run(
        ["bash", "-c", 'cmd() { printf "%s\\0" "$@"; }\n' + script],
        capture_output=True,
        env={"HOME": "/home/u", "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout.decode()
    assert ours == out.split("\0")[:-1]


#: issue 20's false alarms of the reader, each a kind: what bash passes is what the reader reads
KINDS = {
    "two unbraced variables in one word": (
        "A=/data\nB=gsm8k\ncmd data.train_files=$A/$B/train.parquet x=$A$B y=$A-$B/$A"
    ),
    "unbraced variables in an array and an assignment": 'A=/d\nB=m\nP=$A/$B/f\nL=(k=$A/$B/x)\ncmd $P "${L[@]}"',
    "${@:1} and ${@:N}": 'set -- a b c\ncmd "${@:1}" ${@:2} "${@:2:1}" "${@: -1}"',
    "array slices": 'L=(a b c d)\ncmd "${L[@]:1}" "${L[@]:1:2}"',
    "slices with no element are no word": 'set --\nL=()\ncmd k=1 "${@:1}" "${@:2:1}" "${L[@]:1}" "x${@:1}" "$*"',
    "${VAR:?msg} on a set variable": 'M=/models/q\ncmd m=${M:?set M} n="${M:?}"',
    "$(( )) inside ${x:-...}": 'A=2\nB=3\nX=${X:-$((A*B))}\nY=${Y:-$(((A + B) * 2))}\ncmd $X $Y "${Z:-$(( A + 1 ))}"',
    "(( )) commands": "N=8\nP=3\nif (( N % P != 0 )); then R=bad; else R=ok; fi\n(( N += 2 ))\ncmd $R $N",
    "heredoc read into a variable": "read -r -d '' O <<EOF || true\ndata.a=1\ndata.b=$HOME/x\nEOF\ncmd $O",
    "heredoc in a substitution": "O=$(cat <<'EOF'\nk=$NOT_EXPANDED\nEOF\n)\ncmd $O",
    "heredoc before the command": 'cat > /dev/null <<EOF\nit\'s "odd" `x\nEOF\ncmd a=1',
    "backslash-blank-hash cuts the command": "cmd a=1 \\\n  b=2 \\ # the comment\n  c=3\n",
}


@pytest.mark.parametrize("script", list(KINDS.values()), ids=list(KINDS))
def test_false_alarm_kinds_read_as_bash_reads_them(script):
    import subprocess

    ev = run(script)
    cmds = [c for c in ev.commands if c.argv[0].text == "cmd"]
    ours = [w.text for w in cmds[-1].argv[1:]]
    assert all(w.known for w in cmds[-1].argv), [(w.text, w.unknown) for w in cmds[-1].argv]
    out = subprocess.run(
        ["bash", "-c", 'cmd() { printf "%s\\0" "$@"; echo CMD-END; }\n' + script],
        capture_output=True,
        env={"HOME": "/home/u", "PATH": "/usr/bin:/bin"},
    ).stdout.decode()
    assert ours == out.split("CMD-END")[-2].lstrip("\n").split("\0")[:-1]


def test_required_variable_not_given_is_unknown_not_the_end_of_the_script():
    ev = run(': "${MODEL_PATH:?set MODEL_PATH}"\ncmd m=$MODEL_PATH n=${OTHER:?}')
    m, n = ev.commands[-1].argv[1:]
    assert not m.known and "must be given where the script runs" in m.unknown[0]
    assert not n.known and not [x for x in ev.notes if x.kind == "exit"]


def test_a_cut_command_records_where_and_the_words_bash_reads():
    c = run("cmd a=1 \\\n  b=2 \\ # note\n  c=3\n").commands[0]
    assert (c.cut, c.cut_words) == (2, 2)
    assert [w.text for w in c.argv[-2:]] == [" #", "note"]
