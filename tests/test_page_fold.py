"""What a result page folds at build time (`glauber_mlm.book.page_fold`), on small doctrees shaped like myst-nb's, whose
answers are known by construction: long code and long tables fold, figures and their readings never do."""
from docutils import nodes
from myst_nb.sphinx_ import HideCodeCellNode

from glauber_mlm.book import page_fold


def _cell(source_lines: int, output: nodes.Node | None = None) -> nodes.container:
    cell = nodes.container(nb_element="cell_code")
    source = nodes.container(nb_element="cell_code_source")
    source += nodes.literal_block("", "\n".join(f"x{i} = {i}" for i in range(source_lines)))
    cell += source
    if output is not None:
        out = nodes.container(nb_element="cell_code_output")
        out += output
        cell += out
    return cell


def _table_html(rows: int) -> nodes.raw:
    body = "".join(f"<tr><td>{i}</td></tr>" for i in range(rows))
    return nodes.raw("", f"<table><tr><th>k</th></tr>{body}</table>", format="html")


def _folds(node: nodes.Node) -> list[HideCodeCellNode]:
    return list(node.findall(HideCodeCellNode))


def test_long_code_folds_its_source_and_short_code_stays_open():
    assert page_fold.fold_cell(_cell(page_fold.CODE_LINES + 1)) == "input"
    assert page_fold.fold_cell(_cell(page_fold.CODE_LINES)) is None


def test_a_long_table_output_folds_but_an_output_that_draws_never_does():
    long_table = _cell(2, _table_html(page_fold.ROWS + 1))
    assert page_fold.fold_cell(long_table) == "output"
    assert page_fold.fold_cell(_cell(2, _table_html(page_fold.ROWS - 2))) is None
    drawing = nodes.container()
    drawing += _table_html(50)
    drawing += nodes.image(uri="figure.png")
    assert page_fold.fold_cell(_cell(page_fold.CODE_LINES + 5, drawing)) == "input"
    # a cell the notebook already hides keeps its mode and gains the fold of its long output
    tagged = _cell(2, _table_html(page_fold.ROWS + 1))
    tagged["hide_mode"] = "input"
    assert page_fold.fold_cell(tagged) == "input+output"


def _section(*children: nodes.Node, ident: str = "a-section") -> nodes.section:
    section = nodes.section(ids=[ident])
    section += nodes.title("", "A section")
    for child in children:
        section += child
    return section


def _para(text: str, bold: str | None = None) -> nodes.paragraph:
    para = nodes.paragraph()
    if bold:  # as MyST parses "**bold** text": an empty Text node first
        para += [nodes.Text(""), nodes.strong(bold, bold)]
    para += nodes.Text(text)
    return para


def test_a_section_keeps_its_opening_prose_its_figures_and_their_readings_and_folds_the_rest():
    opening, figure = _para("The claim of this section."), nodes.figure()
    reading, after = _para(" it rises.", bold="What Figure 02.1 shows."), _para("So the law is n log n.")
    code, table_cell, how_to = _cell(3), _cell(2, _table_html(3)), _para("How to read it: slowly.")
    section = _section(opening, code, table_cell, how_to, figure, reading, after, _para("A caveat."))
    assert page_fold.fold_section_details(section) == 2
    shown = [c for c in section.children if not isinstance(c, (nodes.title, HideCodeCellNode))]
    assert shown == [opening, figure, reading, after]
    first, last = _folds(section)
    assert first.children == [code, table_cell, how_to]
    assert first["prompt_show"] == "Show 2 code cells, 1 table and 1 paragraph"
    assert last["prompt_show"] == "Show 1 paragraph"


def test_a_cell_tagged_evidence_stays_open_in_a_section_without_a_figure():
    opening, code, table = _para("The longest traps, then every trap."), _cell(3), _cell(1, _table_html(20))
    evidence = _cell(1, _table_html(3))
    evidence["cell_metadata"] = {"tags": ["evidence", "hide-input"]}
    after = _cell(1, _table_html(4))
    section = _section(opening, code, table, evidence, after)
    assert page_fold.fold_section_details(section) == 2
    assert [c for c in section.children if not isinstance(c, (nodes.title, HideCodeCellNode))] == [opening, evidence]
    assert [f.children for f in _folds(section)] == [[code, table], [after]]


def test_the_end_matter_folds_under_its_heading_and_the_result_box_folds_only_its_long_parts():
    downloads = _section(_para("Everything this page computed."), nodes.bullet_list(), ident="downloads")
    history_output = nodes.container(nb_element="cell_code_output")
    history_output += nodes.rubric("", "How these rules came to be", ids=["how-these-rules-came-to-be"])
    history_output += _para("This page's checks changed 3 times.")
    page = nodes.section()
    page += [downloads, history_output]
    assert page_fold.fold_end_sections(page) == 2
    assert isinstance(downloads[0], nodes.title) and isinstance(downloads[1], HideCodeCellNode)
    assert isinstance(history_output[0], nodes.rubric) and isinstance(history_output[1], HideCodeCellNode)

    def box(key_rows: int) -> nodes.admonition:
        table = nodes.table()
        tgroup = nodes.tgroup()
        tbody = nodes.tbody()
        tbody += [nodes.row() for _ in range(key_rows)]
        tgroup += tbody
        table += tgroup
        admonition = nodes.admonition(ids=["result-02"])
        admonition += [_para("Verdict: passes."), table, _para("Rule: a check passes …"),
                       _para("Rules: in force since …")]
        return admonition

    long_box, short_box = box(page_fold.ROWS + 1), box(2)
    assert page_fold.fold_result_box(long_box) == 2 and page_fold.fold_result_box(short_box) == 2  # one policy
    assert long_box[0].astext() == "Verdict: passes." and len(long_box.children) == 3
    assert [f["prompt_show"] for f in _folds(short_box)] == ["Show the 2 key numbers of this build",
                                                             "How the verdict is decided, and since when"]


def test_an_interactive_figure_folds_on_its_own_and_a_static_one_never_does():
    output = nodes.container(nb_element="cell_code_output")
    printed = nodes.literal_block("", "low (τ = 0.1): 1.32")
    plot = nodes.raw("", '<div id="p"></div><script>Plotly.newPlot("p", [])</script>', format="html")
    output += [printed, plot, nodes.image(uri="static.png")]
    assert page_fold.fold_interactive_figures(output) == 1
    assert output[0] is printed and isinstance(output[1], HideCodeCellNode) and isinstance(output[2], nodes.image)
    assert output[1].children == [plot] and output[1]["prompt_show"] == "Show the interactive figure"


def test_a_run_of_wholly_hidden_cells_folds_under_one_summary_and_a_lone_one_stays_as_it_is():
    def hidden() -> nodes.container:
        cell = _cell(3)
        cell["hide_mode"] = "all"
        return cell

    setup, lone, claim, shown = [hidden(), hidden(), hidden()], hidden(), _para("The claim."), _cell(2)
    page = _section(*setup, claim, lone, shown)
    assert page_fold.fold_hidden_runs(page) == 1
    (fold,) = _folds(page)
    assert fold.children == setup and fold["prompt_show"] == "Show 3 code cells"
    assert page.children[1:] == [fold, claim, lone, shown]


def test_a_cell_that_draws_only_an_interactive_figure_is_a_detail_of_its_section():
    output = nodes.container(nb_element="cell_code_output")
    output += [nodes.literal_block("", "low τ: 6.7% of steps changed a token"),
               nodes.raw("", '<script>Plotly.newPlot("p", [])</script>', format="html")]
    explore, figure, reading = _cell(2, output), nodes.figure(), _para(" it rises.", bold="What Figure 03.2 shows.")
    section = _section(_para("The design."), explore, figure, reading)
    page_fold.fold_interactive_figures(section)
    assert page_fold.fold_section_details(section) == 1
    (fold, plot_fold) = _folds(section)
    assert fold.children == [explore] and fold["prompt_show"] == "Show 1 code cell and 1 interactive figure"
    assert plot_fold["prompt_show"] == "Show the interactive figure"
    assert section.children[-2:] == [figure, reading]


def test_a_figure_the_page_marks_folded_folds_with_its_reading_or_not_at_all():
    """A secondary figure with a reading of its own folds with it under its number and title; one whose reading also
    reads an open figure, or that has no reading, stays open (a figure folds with its reading or neither does)."""
    def figure(ident: str, title: str, *classes: str) -> nodes.figure:
        fig = nodes.figure(ids=[ident], classes=list(classes))
        caption = nodes.caption()
        caption += [nodes.strong(title, title), nodes.Text(" The fraction of chains still within δ.")]
        fig += [nodes.image(uri="f.png"), caption]
        return fig

    numbers = {"fig-03-escape-fraction": ("03", 5), "fig-03-escape-survival": ("03", 6)}
    survival = figure("fig-03-escape-survival", "Escape times: Kaplan–Meier survival.", "folded")
    fractions = figure("fig-03-escape-fraction", "How far chains get.")
    own, more = _para(" fewer chains escape at low τ.", bold="What Figure 03.6 shows."), _para("Its median falls.")
    after = _para("The next section.")
    section = _section(fractions, survival, own, more, after)
    assert page_fold.fold_marked_figures(section, numbers) == 1
    (fold,) = _folds(section)
    assert section.children[1:] == [fractions, fold, after] and fold.children == [survival, own, more]
    assert fold["prompt_show"] == "Show Figure 03.6 (Escape times: Kaplan–Meier survival) and its reading"
    assert fold["prompt_hide"] == "Hide Figure 03.6 and its reading"

    survival = figure("fig-03-escape-survival", "Escape times: Kaplan–Meier survival.", "folded")
    shared = _para(" fewer chains escape at low τ.", bold="What Figure 03.5 and Figure 03.6 show.")
    section = _section(fractions, survival, shared)
    assert page_fold.fold_marked_figures(section, numbers) == 0 and not _folds(section)
    alone = _section(figure("fig-03-escape-survival", "Escape times.", "folded"), _para("Prose, no reading."))
    assert page_fold.fold_marked_figures(alone, numbers) == 0