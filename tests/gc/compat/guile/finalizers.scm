;;; Guardians: guile registers a finalizer (GC_register_finalizer_no_order,
;;; finalizers on demand) for each guarded object.  Unreachable objects come
;;; back from their guardian, intact; reachable ones do not, until dropped.
;;; Guile runs finalizers in a thread of its own, told through a pipe when
;;; some are due: what a guardian holds shows up soon after a collection,
;;; not at once.
(load "check.scm")

(define n 2000)
(define kept-count 100)
(define guardian (make-guardian))
(define kept '())
(define pattern (make-string 24 #\g))

(define (make-guarded i)
  (let ((obj (list 'guarded i (string-copy pattern) (make-vector 3 i))))
    (guardian obj)
    obj))

(let loop ((i 0))
  (when (< i n)
    (let ((obj (make-guarded i)))
      (when (< i kept-count) (set! kept (cons obj kept))))
    (loop (+ i 1))))
(check (in-adsm-heap? (car kept)) "guile's objects are not in adsm's heap")

(define (drain)
  (let loop ((acc '()))
    (let ((obj (guardian)))
      (if obj (loop (cons obj acc)) acc))))

;; Collects, then waits (10 s at most) for `want` objects to come back.
(define (collect-until want)
  (collect)
  (let loop ((got (drain)) (tries 0))
    (if (or (>= (length got) want) (= tries 500))
        got
        (begin
          (usleep 20000)
          (when (= 0 (modulo tries 25)) (gc))
          (loop (append (drain) got) (+ tries 1))))))

(define (intact? obj)
  (and (pair? obj) (eq? (car obj) 'guarded) (string=? (caddr obj) pattern)
       (equal? (cadddr obj) (make-vector 3 (cadr obj)))))

(define returned (collect-until (most-of (- n kept-count))))
(check (>= (length returned) (most-of (- n kept-count)))
       (length returned) " of " (- n kept-count) " unreachable objects came back")
(for-each (lambda (obj)
            (check (intact? obj) "a returned object is damaged: " obj)
            (check (not (memq obj kept)) "a reachable object came back: " (cadr obj)))
          returned)

(set! kept '())
(define later (collect-until (most-of kept-count)))
(check (>= (length later) (most-of kept-count))
       (length later) " of " kept-count " dropped objects came back")
(for-each (lambda (obj) (check (intact? obj) "a returned object is damaged: " obj)) later)
(format #t "finalizers: ok (~a and ~a objects came back)\n" (length returned) (length later))
