module novaos.dev/novaos

go 1.26
