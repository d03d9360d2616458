-- No query reads the run events of one run: they are read by position,
-- for every tenant or for one. The index by run cost an entry per status
-- change and its bytes.
DROP INDEX run_events_by_run;
