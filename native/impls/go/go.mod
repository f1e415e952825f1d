module pqlab/impls

go 1.26
