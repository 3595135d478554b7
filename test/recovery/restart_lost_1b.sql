-- second run (after a clean restart): both leanstore tables change; the
-- bulk load changes lost_t's cold pages, saved first in its undo journal
UPDATE kept_t SET v = 'second run' WHERE id = 20;
SET leanstore.bulk_load_rows = 10;
INSERT INTO lost_t SELECT g, 'w' || g FROM generate_series(1001, 3000) g;
RESET leanstore.bulk_load_rows;
SELECT count(*) FROM lost_t;
