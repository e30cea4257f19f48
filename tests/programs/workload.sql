-- A scripted SQLite workload: bulk inserts, indexes, joins, aggregates,
-- updates, deletes, a vacuum, and results that depend on all of them.
PRAGMA cache_size = -65536;
CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, region INTEGER);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, amount REAL, note TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO customers SELECT i, 'customer-' || i, i % 17 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
INSERT INTO orders SELECT i, (i * 7919) % 20000 + 1, (i * 31 % 1000) / 10.0, printf('%0300d', i) FROM n;
CREATE INDEX orders_customer ON orders(customer);
CREATE INDEX customers_region ON customers(region);
SELECT region, count(*), printf('%.2f', sum(amount)) FROM orders JOIN customers ON customers.id = orders.customer
GROUP BY region ORDER BY region;
UPDATE orders SET amount = amount * 1.5 WHERE customer % 3 = 0;
DELETE FROM orders WHERE id % 11 = 0;
VACUUM;
SELECT count(*), printf('%.2f', sum(amount)), max(length(note)) FROM orders;
SELECT name, printf('%.2f', total) FROM (SELECT customer, sum(amount) AS total FROM orders GROUP BY customer)
JOIN customers ON customers.id = customer ORDER BY total DESC, name LIMIT 5;
