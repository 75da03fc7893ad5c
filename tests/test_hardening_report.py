"""What the report, plot, export and record commands read back is untrusted: a tables.json that is
not an object of checksums, or a record's runs.csv without its run ids, is refused in one line
naming the file (exit 2, no traceback)."""
import hashlib
import json
import re
import shutil

import pytest
from cli_helpers import CONFIGS, invoke

SPEC = [CONFIGS / "deepsea_tabular.yaml", "--set", "seeds=1", "--set", "episodes=20"]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A tiny deep sea sweep's results folder, and a record of it."""
    root = tmp_path_factory.mktemp("hardening")
    assert invoke("run", *SPEC, "--out", root / "results", "--record", root / "record").exit_code == 0
    return root


def _command(name: str, folder, tmp_path) -> list:
    """The arguments of `rvfx NAME` reading `folder` (a results folder; a record for record)."""
    return {"report": ["report", "--results", folder, "--out", tmp_path / "out"],
            "plot": ["plot", "deepsea_tabular", "--results", folder, "--out", tmp_path / "out"],
            "export": ["export", "--results", folder, "--out", tmp_path / "out"],
            "record": ["run", *SPEC, "--out", tmp_path / "fresh", "--record", folder]}[name]


def _refused(result, names) -> None:
    """Exit 2 and one error line, naming the file."""
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2, result.output
    assert len(errors) == 1 and str(names) in errors[0], result.output


@pytest.mark.parametrize("text", ["[1]", "{{{", '"runs.csv"'])
@pytest.mark.parametrize("command", ["report", "plot", "export", "record"])
def test_a_tables_json_that_is_not_an_object_of_checksums_is_refused_naming_it(made, tmp_path, command, text):
    folder = tmp_path / "folder"
    shutil.copytree(made / ("record" if command == "record" else "results"), folder)
    (folder / "deepsea_tabular" / "tables.json").write_text(text)
    _refused(invoke(*_command(command, folder, tmp_path)), (folder / "deepsea_tabular" / "tables.json").resolve())


def test_a_record_whose_runs_csv_lacks_run_ids_is_refused_naming_it(made, tmp_path):
    """Its tables.json agrees with it (a record edited by hand and re-hashed): still no run ids."""
    folder = tmp_path / "record"
    shutil.copytree(made / "record", folder)
    runs, tables = folder / "deepsea_tabular" / "runs.csv", folder / "deepsea_tabular" / "tables.json"
    lines = [line.split(",") for line in runs.read_text().splitlines()]
    at = lines[0].index("run_id")
    runs.write_text("".join(",".join(row[:at] + row[at + 1:]) + "\n" for row in lines))
    tables.write_text(json.dumps({**json.loads(tables.read_text()),
                                  "runs.csv": hashlib.sha256(runs.read_bytes()).hexdigest()}))
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    _refused(invoke(*_command("record", folder, tmp_path)), runs)
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


FORGED = ("<img src=x onerror=alert(1)>", "</table><script>alert(2)</script>")


def test_names_read_from_the_tables_are_text_in_report_md_and_the_readme_blocks(made, tmp_path):
    """Agent names forged in a results folder's runs.csv (raw HTML) reach report.md, a README's report
    block and its table block as text (`<` written &lt;), as report.html shows them; the report
    still reads them: each is a level of the claim's groups."""
    results = tmp_path / "results"
    shutil.copytree(made / "results", results)
    runs = results / "deepsea_tabular" / "runs.csv"
    runs.write_text(runs.read_text().replace(",psrl,", f",{FORGED[0]},").replace(",rlsvi,", f",\"{FORGED[1]}\","))
    (results / "deepsea_tabular" / "tables.json").unlink()
    (tmp_path / "agents.md").write_text(f"| agent |\n|---|\n| {FORGED[0]} |\n")
    readme = tmp_path / "README.md"
    readme.write_text("# r\n\n<!-- report:begin fig4_order_ucrl2_all_states -->\n<!-- report:end -->\n\n"
                      "<!-- table:begin agents.md -->\n<!-- table:end -->\n")
    result = invoke("report", "--results", results, "--out", tmp_path / "out", "--readme", readme)
    assert result.exit_code == 0, result.output
    md, block = (tmp_path / "out" / "report.md").read_text(), readme.read_text()
    for text in (md, block):
        assert not re.search(r"<(?=[A-Za-z/!?])", text.replace("<!-- report:", "").replace("<!-- table:", ""))
        assert "&lt;img src=x onerror=alert(1)>" in text
    assert "&lt;/table>&lt;script>alert(2)&lt;/script>" in md
    assert "&lt;img src=x onerror=alert(1)>" in (tmp_path / "out" / "report.html").read_text().replace("&gt;", ">")
    assert invoke("report", "--results", results, "--out", tmp_path / "out", "--readme", readme,
                  "--check").exit_code == 0
