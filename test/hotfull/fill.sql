-- The filler of the hotfull scripts (spill_follow.sh, lock_levels.sh): a
-- leanstore table whose rows churn() updates ten times over in the calling
-- transaction; its own versions then fill the 32MB hot tier (pack cannot
-- move them before it ends).
CREATE TABLE fill (id int PRIMARY KEY, pad text) USING leanstore;
INSERT INTO fill SELECT g, repeat('a', 200) FROM generate_series(1, 20000) g;
CREATE PROCEDURE churn() LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. 10 LOOP
    UPDATE fill SET pad = repeat(chr(98 + i), 200);
  END LOOP;
END $$;
