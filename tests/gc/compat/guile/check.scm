;;; What every script here shares: checks that end the run with a failure
;;; status, and a check that guile's objects live in adsm's collected heap
;;; (adsmGcBase, looked up in the process: it fails without the runtime).
(use-modules (system foreign))

(define (fail . what)
  (let ((err (current-error-port)))
    (display "FAIL: " err)
    (for-each (lambda (w) (display w err)) what)
    (newline err)
    (exit 1)))

(define (check ok . what)
  (unless ok (apply fail what)))

(define adsm-gc-base
  (pointer->procedure '* (dynamic-func "adsmGcBase" (dynamic-link)) (list '*)))

(define (in-adsm-heap? obj)
  (let ((p (scm->pointer obj)))
    (= (pointer-address (adsm-gc-base p)) (pointer-address p))))

;; Conservative roots (a stale register, a dead stack slot) may keep a few
;; objects that nothing reaches any more: "most" is what can be asserted.
(define (most-of n) (quotient (* n 9) 10))

(define (collect) (gc) (gc))
