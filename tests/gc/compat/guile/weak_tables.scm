;;; Weak hash tables and weak vectors: guile keeps their weak references in
;;; typed objects whose bitmap leaves them out, as disappearing links.
;;; Entries whose weak part nothing else reaches vanish after a collection;
;;; entries whose keys or values are kept stay, with their values.
(use-modules (ice-9 weak-vector))
(load "check.scm")

(define n 10000)
(define kept-count 100)

(define (entries table) (hash-fold (lambda (k v acc) (+ acc 1)) 0 table))

;; Fill `table` with n entries, keys and values fresh; return the first
;; kept-count (key . value) pairs, which the caller keeps.
(define (fill! table)
  (let loop ((i 0) (kept '()))
    (if (= i n)
        kept
        (let ((key (list 'key i)) (value (list 'value i)))
          (hash-set! table key value)
          (loop (+ i 1) (if (< i kept-count) (cons (cons key value) kept) kept))))))

;; (No collection while it fills and counts: one would take the entries
;; whose keys are already garbage, and the count says nothing then.)
(define (check-table name make)
  (gc-disable)
  (let* ((table (make))
         (kept (fill! table)))
    (check (= (entries table) n) name ": " (entries table) " entries before any collection")
    (gc-enable)
    (check (in-adsm-heap? (caar kept)) "guile's objects are not in adsm's heap")
    (collect)
    (let ((left (entries table)))
      (check (<= left (+ kept-count (- n kept-count (most-of (- n kept-count)))))
             name ": " left " of " n " entries left, " kept-count " kept")
      (for-each (lambda (kv)
                  (check (equal? (hash-ref table (car kv)) (cdr kv)) name ": a kept entry is gone or changed"))
                kept)
      (format #t "~a: ~a of ~a entries left\n" name left n))
    ;; Kept to here.
    (check (= (length kept) kept-count) name)))

(check-table "weak keys" (lambda () (make-weak-key-hash-table)))
(check-table "weak values" (lambda () (make-weak-value-hash-table)))
(check-table "doubly weak" (lambda () (make-doubly-weak-hash-table)))

;; A weak vector's slots go #f when their objects die.
(define v (make-weak-vector n #f))
(define held (make-vector kept-count #f))
(let loop ((i 0))
  (when (< i n)
    (let ((obj (list 'slot i)))
      (weak-vector-set! v i obj)
      (when (< i kept-count) (vector-set! held i obj)))
    (loop (+ i 1))))
(collect)
(define cleared
  (let loop ((i 0) (c 0))
    (if (= i n) c (loop (+ i 1) (if (weak-vector-ref v i) c (+ c 1))))))
(check (>= cleared (most-of (- n kept-count))) cleared " of " (- n kept-count) " weak vector slots cleared")
(let loop ((i 0))
  (when (< i kept-count)
    (check (eq? (weak-vector-ref v i) (vector-ref held i)) "a kept weak vector slot changed")
    (loop (+ i 1))))
(format #t "weak_tables: ok (~a weak vector slots cleared)\n" cleared)
