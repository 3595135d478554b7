-- YCSB-like transaction for pgbench (bench/run ycsb): one key, drawn from a
-- Zipfian distribution (s = 1.1) over 0 .. rows-1 and scrambled by permute()
-- so that the hot keys are spread over the whole table instead of being its
-- first rows; :readpct percent of the transactions read the row, the others
-- update its counter.  Variables from pgbench -D: rows, readpct.
\set r random_zipfian(0, :rows - 1, 1.1)
\set k permute(:r, :rows)
\set p random(1, 100)
\if :p <= :readpct
SELECT n, f FROM ycsb WHERE k = :k;
\else
UPDATE ycsb SET n = n + 1 WHERE k = :k;
\endif
