from grader.tools import parse_ncu_csv, parse_sanitizer

NCU = '''==PROF== Connected to process 123
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
"","","","","","","","","","","","sector","sector"
"0","123","python","h","matmul_tiled","1","7","(32, 32, 1)","(32, 32, 1)","0","9.0","8,000,000","125,000"
"1","123","python","h","matmul_tiled","1","7","(32, 32, 1)","(32, 32, 1)","0","9.0","7,900,000","125,000"
'''


def test_ncu_rows_strip_separators_and_report_missing_columns():
    rows = parse_ncu_csv(NCU, ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "made_up.sum"])
    assert rows.missing == ("made_up.sum",)
    assert [r["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] for r in rows.rows] == [8_000_000, 7_900_000]


def test_ncu_without_csv_reports_everything_missing():
    assert parse_ncu_csv("==ERR== no kernels profiled", ["a"]).missing == ("a",)


def test_sanitizer_summary_and_first_lines():
    log = """========= COMPUTE-SANITIZER
========= Race reported between Write access at matmul_tiled+0x2a0 in submission.cu:9
=========     and Read access at matmul_tiled+0x3f0 in submission.cu:13 [2048 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
========= ERROR SUMMARY: 1 error
"""
    report = parse_sanitizer(log)
    assert report.errors == 1
    assert report.lines[0].startswith("Race reported between Write access")
