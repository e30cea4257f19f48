;;; Threads that allocate at once: each builds and checks its own lists,
;;; vectors and strings while the others allocate and collect, and hands
;;; back a structure the main thread checks after joining it.
(use-modules (ice-9 threads))
(load "check.scm")

(define threads-count 4)
(define rounds 200)

(define (build i)
  (list (iota 100 i) (make-vector 50 i) (number->string (* i i))))

(define (built? x i)
  (and (equal? (car x) (iota 100 i))
       (equal? (cadr x) (make-vector 50 i))
       (string=? (caddr x) (number->string (* i i)))))

(define (work id)
  (let loop ((r 0) (keep '()))
    (if (= r rounds)
        (begin
          (let check-kept ((k keep) (i (- rounds 1)))
            (unless (null? k)
              (check (built? (car k) (+ (* id 1000) i)) "thread " id ": a kept structure changed")
              (check-kept (cdr k) (- i 1))))
          keep)
        (let ((x (build (+ (* id 1000) r))))
          (make-list 1000 r)  ; garbage
          (when (= 0 (modulo r 50)) (gc))
          (check (built? x (+ (* id 1000) r)) "thread " id " round " r ": a fresh structure is wrong")
          (loop (+ r 1) (cons x keep))))))

(define counter 0)
(define counter-lock (make-mutex))

(define threads
  (map (lambda (id)
         (call-with-new-thread
          (lambda ()
            (let ((result (work id)))
              (with-mutex counter-lock (set! counter (+ counter 1)))
              result))))
       (iota threads-count)))

;; The main thread allocates meanwhile.
(let loop ((i 0)) (when (< i 20000) (make-vector 10 i) (loop (+ i 1))))

(define results (map join-thread threads))
(check (= counter threads-count) counter " threads finished")
(for-each (lambda (id result)
            (check (= (length result) rounds) "thread " id " kept " (length result))
            (check (in-adsm-heap? result) "guile's objects are not in adsm's heap")
            (let loop ((k result) (i (- rounds 1)))
              (unless (null? k)
                (check (built? (car k) (+ (* id 1000) i)) "thread " id "'s result changed after it ended")
                (loop (cdr k) (- i 1)))))
          (iota threads-count) results)
(collect)
(format #t "threads: ok (~a threads, ~a rounds each)\n" threads-count rounds)
