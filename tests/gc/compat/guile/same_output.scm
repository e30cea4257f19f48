;;; A program whose output does not depend on the collector: it must print
;;; the same with libgc as with adsm's collector preloaded, under every
;;; protocol (same_output.sh runs it both ways).  It allocates enough to
;;; collect many times while threads, weak tables and guardians are in use.
(use-modules (ice-9 threads) (srfi srfi-1))

;; Trees built and checked by several threads at once.
(define (make-tree depth)
  (if (= depth 0) '() (cons (make-tree (- depth 1)) (make-tree (- depth 1)))))
(define (tree-size t) (if (null? t) 1 (+ (tree-size (car t)) (tree-size (cdr t)))))
(define (work seed)
  (let loop ((i 0) (sum 0))
    (if (= i 40)
        sum
        (loop (+ i 1) (+ sum (tree-size (make-tree (+ 6 (modulo (+ seed i) 8)))))))))
(define sums (par-map work (iota 6)))
(format #t "trees: ~a\n" sums)

;; A weak-key table: keys held elsewhere keep their entries.
(define held (map (lambda (i) (list 'key i)) (iota 500)))
(define table (make-weak-key-hash-table))
(for-each (lambda (k) (hash-set! table k (cadr k))) held)
(let loop ((i 0))  ; garbage keys, and enough allocation to collect
  (when (< i 20000)
    (hash-set! table (list 'gone i) i)
    (loop (+ i 1))))
(gc)
(format #t "held keys found: ~a of ~a, values right: ~a\n"
        (count (lambda (k) (hash-ref table k)) held) (length held)
        (every (lambda (k) (eqv? (hash-ref table k) (cadr k))) held))

;; A guardian gives back only objects nothing else reaches, intact.
(define g (make-guardian))
(define kept (map (lambda (i) (make-string 64 (integer->char (+ 65 (modulo i 26))))) (iota 100)))
(for-each g kept)
(let loop ((i 0))
  (when (< i 2000)
    (g (make-string 64 #\z))
    (loop (+ i 1))))
(gc)
(gc)
(define returned
  (let loop ((acc '()))
    (let ((o (g)))
      (if o (loop (cons o acc)) acc))))
(format #t "guardian gave back a kept object: ~a, all it gave back intact: ~a\n"
        (any (lambda (o) (memq o kept)) returned)
        (every (lambda (o) (string=? o (make-string 64 #\z))) returned))

;; Strings and vectors that live across collections keep their contents.
(define v (list->vector (map (lambda (i) (number->string (* i i))) (iota 5000))))
(let loop ((i 0)) (when (< i 200000) (cons i i) (loop (+ i 1))))
(gc)
(format #t "vector checksum: ~a\n"
        (fold (lambda (i acc) (+ acc (string->number (vector-ref v i)))) 0 (iota 5000)))
